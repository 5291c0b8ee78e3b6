package sqlitefile_test

import (
	"strings"
	"testing"
)

// TestOverlapCheckUsesLiveIndex checks that Init creates the partial index
// on the runs that hold a lease (sqlbackend's runs_live), and that
// SQLite's planner takes it for the overlap check's count of a job's live
// runs (sql/runs.sql: liveOtherRun, leaseClaims), so the check does not
// read every run the job's history keeps.
func TestOverlapCheckUsesLiveIndex(t *testing.T) {
	be := open(t, 1)[0]
	ctx := t.Context()
	if err := be.Init(ctx); err != nil {
		t.Fatal(err)
	}
	var sql string
	if err := be.DB().QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'anarchon_runs_live'`).Scan(&sql); err != nil {
		t.Fatalf("index anarchon_runs_live: %v", err)
	}
	if !strings.Contains(sql, "WHERE state = 'running' AND lease_until IS NOT NULL") {
		t.Errorf("index anarchon_runs_live: %s", sql)
	}
	rows, err := be.DB().QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT slot FROM "anarchon_runs" WHERE job = ? AND slot <> ? AND state = 'running'
AND lease_until IS NOT NULL AND lease_until > ? LIMIT ?`, "j", 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "anarchon_runs_live") {
		t.Errorf("the live runs of a job are not read through anarchon_runs_live: %s", p)
	}
}
