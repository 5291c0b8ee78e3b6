package sqlitefile_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT … ON CONFLICT DO NOTHING it is built on, on the same file in
// the same run, alternating them, and reports the ratio (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	be := open(b, 1)[0]
	ctx := context.Background()
	if err := be.PrepareJob(ctx, "bench", 100); err != nil {
		b.Fatal(err)
	}
	db := be.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE raw_claims (job TEXT NOT NULL, slot INTEGER NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`); err != nil {
		b.Fatal(err)
	}
	var raw, claim time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		res, err := db.ExecContext(ctx, `INSERT INTO raw_claims (job, slot, token) VALUES (?, ?, ?) ON CONFLICT (job, slot) DO NOTHING`, "bench", i, tok)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			b.Fatal("raw insert lost")
		}
		t1 := time.Now()
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		claim += time.Since(t1)
		raw += t1.Sub(t0)
	}
	report(b, raw, claim)
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (one
// BEGIN IMMEDIATE transaction).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	be := open(b, 1)[0]
	ctx := context.Background()
	db := be.DB()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE raw_claims (job TEXT NOT NULL, slot INTEGER NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`); err != nil {
		b.Fatal(err)
	}
	rs := be.Runs()
	var raw, claim time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		if _, err := db.ExecContext(ctx, `INSERT INTO raw_claims (job, slot, token) VALUES (?, ?, ?) ON CONFLICT (job, slot) DO NOTHING`, "bench", i, tok); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatal(out, err)
		}
		claim += time.Since(t1)
		raw += t1.Sub(t0)
	}
	report(b, raw, claim)
}

func report(b *testing.B, raw, claim time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(claim.Nanoseconds())/n, "claim-ns/op")
	b.ReportMetric(float64(claim)/float64(raw), "claim/raw")
}

// BenchmarkFinishResult times FinishResult (one BEGIN IMMEDIATE
// transaction) against Finish followed by SaveResult (two) on the same
// file in the same run, alternating them, each after a won lease claim of
// its own slot, and reports the ratio (one/two).
func BenchmarkFinishResult(b *testing.B) {
	be := open(b, 1)[0]
	ctx := context.Background()
	if err := be.PrepareJob(ctx, "bench", 100); err != nil {
		b.Fatal(err)
	}
	rs := be.Runs()
	f := rs.(anarchon.ResultFinisher)
	claim := func(slot int64, tok string) {
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: slot, Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatal(out, err)
		}
	}
	var twoD, oneD time.Duration
	for i := 0; b.Loop(); i++ {
		s1, s2 := int64(2*i), int64(2*i+1)
		t1, t2 := strconv.Itoa(2*i), strconv.Itoa(2*i+1)
		claim(s1, t1)
		claim(s2, t2)
		now := time.Now()
		res := anarchon.StoredResult{Slot: s1, Token: t1, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}
		t0 := time.Now()
		if ok, err := rs.Finish(ctx, "bench", s1, t1, res.Status); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := be.SaveResult(ctx, "bench", res, 100, 0); err != nil {
			b.Fatal(err)
		}
		tm := time.Now()
		res.Slot, res.Token = s2, t2
		if ok, err := f.FinishResult(ctx, "bench", res, 100, 0); err != nil || !ok {
			b.Fatal(ok, err)
		}
		oneD += time.Since(tm)
		twoD += tm.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(twoD.Nanoseconds())/n, "finish+save-ns/op")
	b.ReportMetric(float64(oneD.Nanoseconds())/n, "finishresult-ns/op")
	b.ReportMetric(float64(oneD)/float64(twoD), "one/two")
}
