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
