package sqlitefile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// reset forgets the statements kept so far.
func (c *texts) reset() {
	c.mu.Lock()
	c.qs = nil
	c.mu.Unlock()
}

// TestBatchKeysAsJSON: SQLite's batches pass their slots as one JSON
// array read with jsonb_each (sqlbackend.SQLDialect.JSONKeys; the
// library here is newer than 3.45.0), plain and
// lease, read and write, and a lease batch takes its won jobs' fences
// the same way; a batch with a text JSON would change (invalid UTF-8,
// NUL) joins its slots with UNION ALL instead, and is answered the same,
// as is every batch of the SQL base on SQLite with JSONKeys off. The
// batches of the claims' results and finishes take their entries the
// same way.
func TestBatchKeysAsJSON(t *testing.T) {
	ctx := t.Context()
	c := &texts{conn: fileConn(t)}
	b, err := sqlitebackend.NewFromConn(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := &texts{conn: fileConn(t)}
	d := sqlitebackend.Dialect
	d.JSONKeys = false
	ob, err := sqlbackend.New(sqlbackend.Config{Name: "sqlite", Dialect: d, Conn: off})
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range []anarchon.Backend{b, ob} {
		if err := be.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	for _, tc := range []struct {
		name string
		b    batches
		c    *texts
		inst string
		json bool // every batch statement in its JSON form; false: the claims' writes and fences joined with UNION ALL
	}{
		{"JSON", b, c, "plain-instance", true},
		{"an instance ID JSON would change", b, c, "bad\xff\x00instance", false},
		{"JSONKeys off", ob, off, "plain-instance", false},
	} {
		in := make([]anarchon.ClaimInput, 3)
		for i := range in {
			in[i] = anarchon.ClaimInput{Job: "job" + string(rune('a'+i)), Slot: slot, Token: "tok-" + tc.inst, InstanceID: tc.inst}
		}
		slot += 1000
		tc.c.reset()
		for round := range 2 { // the new slots, then the same again: read, answered won
			out, err := tc.b.ClaimBatch(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range out {
				if !a.Won || a.Err != nil {
					t.Fatalf("%s: round %d claim %d: %+v", tc.name, round, i, a)
				}
			}
		}
		rc := make([]anarchon.RunClaim, len(in))
		for i := range rc {
			rc[i] = anarchon.RunClaim{ClaimInput: in[i], Lease: time.Minute, AllowOverlap: true}
			rc[i].Job += "-lease"
			// A job row, so that the claims are won together (leaseClaims,
			// takeFences), not one by one.
			if err := tc.b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: rc[i].Job}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := tc.b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range out {
			if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon {
				t.Fatalf("%s: lease claim %d: %+v", tc.name, i, a)
			}
		}
		// The batches of their results and finishes, each job once:
		// written one step at a time for the whole batch, their keys in
		// the same form as the claims'.
		res := successes(append(slices.Clone(in), claimsOf(rc)...))
		errs, err := tc.b.SaveResults(ctx, res[:len(in)])
		if err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
			t.Fatalf("%s: SaveResults: %v, %v", tc.name, errs, err)
		}
		held, err := tc.b.Runs().(anarchon.FinishBatcher).FinishResults(ctx, res[len(in):])
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range held {
			if !h.Held || h.Err != nil {
				t.Fatalf("%s: finish %d: %+v", tc.name, i, h)
			}
		}
		for _, r := range res {
			recs, err := tc.b.History(ctx, r.Job, 1)
			if err != nil || len(recs) != 1 || recs[0].Token != r.Result.Token || recs[0].Status != anarchon.StatusSuccess || recs[0].ClaimedAt.IsZero() {
				t.Errorf("%s: History(%s) = %+v, %v; want the success of %s", tc.name, r.Job, recs, err, r.Result.Token)
			}
		}
		if tc.c.qs == nil {
			t.Fatal("no statement was kept")
		}
		all := strings.Join(tc.c.qs, "\n")
		// With JSONKeys the reads of the slots' rows, which carry no
		// instance, are JSON either way.
		if jsonKeys := tc.c != off; jsonKeys != strings.Contains(all, "jsonb_each(") || tc.json == strings.Contains(all, "UNION ALL") {
			t.Errorf("%s: jsonb_each %v, UNION ALL %v, want %v and %v; statements:\n%s", tc.name,
				strings.Contains(all, "jsonb_each("), strings.Contains(all, "UNION ALL"), jsonKeys, !tc.json, all)
		}
		// The fences of the won jobs, whose names are safe: JSON with
		// JSONKeys, a list of parameters never.
		fences := ""
		for _, q := range tc.c.qs {
			if strings.Contains(q, "SET fence = fence + 1") {
				fences = q
			}
		}
		if fences == "" || strings.Contains(fences, "job IN (?") || (tc.c != off) != strings.Contains(fences, "jsonb_each(") {
			t.Errorf("%s: the fences were taken by %q", tc.name, fences)
		}
		tc.c.reset()
	}
}

// batches is what TestBatchKeysAsJSON claims and stores through.
type batches interface {
	anarchon.Backend
	anarchon.BatchClaimer
	anarchon.ResultBatcher
	Runs() anarchon.RunStore
}

// claimsOf returns the plain part of each lease claim of rc.
func claimsOf(rc []anarchon.RunClaim) []anarchon.ClaimInput {
	out := make([]anarchon.ClaimInput, len(rc))
	for i, c := range rc {
		out[i] = c.ClaimInput
	}
	return out
}

// olderLibrary is a sqlbackend.Conn that answers as a SQLite library
// older than 3.45.0, which has json_each but not jsonb_each: a statement
// naming jsonb_each fails with that library's error, or with probeErr
// while it is set. The statements it ran go to texts.
type olderLibrary struct {
	texts
	probeErr error
}

func (c *olderLibrary) refuse(q string) error {
	if !strings.Contains(q, "jsonb_each(") {
		return nil
	}
	if c.probeErr != nil {
		return c.probeErr
	}
	return errors.New("SQL logic error: no such table: jsonb_each (1)")
}

func (c *olderLibrary) All(ctx context.Context, q string, args ...any) ([][]any, error) {
	if err := c.refuse(q); err != nil {
		return nil, err
	}
	return c.texts.All(ctx, q, args...)
}

func (c *olderLibrary) Transaction(ctx context.Context, fn func(tx sqlbackend.Querier) error) error {
	return c.texts.Transaction(ctx, func(tx sqlbackend.Querier) error {
		return fn(sqlbackend.QuerierFunc(func(ctx context.Context, q string, args ...any) ([][]any, error) {
			if err := c.refuse(q); err != nil {
				return nil, err
			}
			return tx.All(ctx, q, args...)
		}))
	})
}

// TestJSONEachBeforeJSONB: on a library without jsonb_each (before
// 3.45.0) Init finds so and the batches read their JSON array with
// json_each, and are answered as on a newer library; a failure of the
// probe that is not the missing function (here a busy database) fails
// Init with it, and the next Init probes again.
func TestJSONEachBeforeJSONB(t *testing.T) {
	ctx := t.Context()
	c := &olderLibrary{texts: texts{conn: fileConn(t)}, probeErr: errors.New("database is locked (5) (SQLITE_BUSY)")}
	b, err := sqlitebackend.NewFromConn(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Init(ctx); err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Fatalf("Init with the probe busy: %v, want the busy error", err)
	}
	c.probeErr = nil
	if err := b.Init(ctx); err != nil {
		t.Fatalf("Init on a library without jsonb_each: %v", err)
	}
	c.reset()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli()
	in := make([]anarchon.ClaimInput, 3)
	rc := make([]anarchon.RunClaim, len(in))
	for i := range in {
		in[i] = anarchon.ClaimInput{Job: "job" + string(rune('a'+i)), Slot: slot, Token: "tok", InstanceID: "inst"}
		rc[i] = anarchon.RunClaim{ClaimInput: in[i], Lease: time.Minute}
		rc[i].Job += "-lease"
		if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: rc[i].Job}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.ClaimBatch(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range out {
		if !a.Won || a.Err != nil {
			t.Errorf("claim %d: %+v, want won", i, a)
		}
	}
	lease, err := b.Runs().(anarchon.RunBatchClaimer).ClaimRuns(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range lease {
		if a.Err != nil || a.Outcome.Kind != anarchon.OutcomeWon || a.Outcome.Fence == 0 {
			t.Errorf("lease claim %d: %+v, want won with a fence", i, a)
		}
	}
	all := strings.Join(c.qs, "\n")
	if !strings.Contains(all, "json_each(") || strings.Contains(all, "jsonb_each(") || strings.Contains(all, "UNION ALL") {
		t.Errorf("the batches' statements on a library without jsonb_each:\n%s", all)
	}
}
