package sqlitefile_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/anarchon/anarchon/sqlitebackend"
)

// texts is a sqlbackend.Conn that keeps the text of every statement run
// through the Conn it wraps.
type texts struct {
	conn sqlbackend.Conn
	mu   sync.Mutex
	qs   []string
}

func (c *texts) keep(q string) {
	c.mu.Lock()
	c.qs = append(c.qs, q)
	c.mu.Unlock()
}

func (c *texts) All(ctx context.Context, q string, args ...any) ([][]any, error) {
	c.keep(q)
	return c.conn.All(ctx, q, args...)
}

func (c *texts) Transaction(ctx context.Context, fn func(tx sqlbackend.Querier) error) error {
	return c.conn.Transaction(ctx, func(tx sqlbackend.Querier) error {
		return fn(sqlbackend.QuerierFunc(func(ctx context.Context, q string, args ...any) ([][]any, error) {
			c.keep(q)
			return tx.All(ctx, q, args...)
		}))
	})
}

// textSafe: valid UTF-8 without NUL, which JSON keeps as it is.
func textSafe(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

// reset forgets the statements kept so far.
func (c *texts) reset() {
	c.mu.Lock()
	c.qs = nil
	c.mu.Unlock()
}

// TestBatchKeysAsJSON: SQLite's batches pass their slots as one JSON
// array read with json_each (sqlbackend.SQLDialect.JSONKeys), plain and
// lease, read and write, and a lease batch takes its won jobs' fences
// the same way; a batch with a text JSON would change (invalid UTF-8,
// NUL) joins its slots with UNION ALL instead, and is answered the same.
func TestBatchKeysAsJSON(t *testing.T) {
	c := &texts{conn: fileConn(t)}
	b, err := sqlitebackend.NewFromConn(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	for _, inst := range []string{"plain-instance", "bad\xff\x00instance"} {
		json := textSafe(inst)
		in := make([]anarchon.ClaimInput, 3)
		for i := range in {
			in[i] = anarchon.ClaimInput{Job: "job" + string(rune('a'+i)), Slot: slot, Token: "tok-" + inst, InstanceID: inst}
		}
		slot += 1000
		c.reset()
		for round := range 2 { // the new slots, then the same again: read, answered won
			out, err := b.ClaimBatch(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range out {
				if !a.Won || a.Err != nil {
					t.Fatalf("instance %q round %d claim %d: %+v", inst, round, i, a)
				}
			}
		}
		rc := make([]anarchon.RunClaim, len(in))
		for i := range rc {
			rc[i] = anarchon.RunClaim{ClaimInput: in[i], Lease: time.Minute, AllowOverlap: true}
			rc[i].Job += "-lease"
		}
		out, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
				t.Fatalf("instance %q lease claim %d: %+v", inst, i, a)
			}
		}
		if c.qs == nil {
			t.Fatal("no statement was kept")
		}
		all := strings.Join(c.qs, "\n")
		// The reads of the slots' rows carry no instance: JSON either way.
		if !strings.Contains(all, "json_each(") || json == strings.Contains(all, "UNION ALL") {
			t.Errorf("instance %q: want json_each for every batch statement%s; statements:\n%s", inst,
				map[bool]string{true: "", false: " but the claims' writes, joined with UNION ALL"}[json], all)
		}
		// The fences of the won jobs, whose names are safe either way.
		if strings.Contains(all, "job IN (?") {
			t.Errorf("instance %q: the fences were taken with a list of parameters, want json_each:\n%s", inst, all)
		}
		c.reset()
	}
}
