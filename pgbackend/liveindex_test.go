package pgbackend_test

import (
	"strings"
	"testing"
)

// TestInitCreatesLiveIndex checks that Init creates the partial index on
// the runs that hold a lease (sqlbackend's runs_live), through which a
// lease claim's overlap check counts a job's live runs, and that a second
// Init, as on a database an older version made, leaves one.
// BenchmarkClaimRunsHistory measures what it saves.
func TestInitCreatesLiveIndex(t *testing.T) {
	schema := freshSchema(t)
	be := open(t, 1, 2, schema)[0]
	ctx := t.Context()
	for range 2 {
		if err := be.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var defs []string
	rows, err := be.Pool().Query(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'anarchon_runs_live'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || !strings.Contains(defs[0], "(job) WHERE ((state = 'running'::text) AND (lease_until IS NOT NULL))") {
		t.Errorf("index anarchon_runs_live in %s: %q", schema, defs)
	}
}
