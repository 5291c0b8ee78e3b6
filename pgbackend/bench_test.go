package pgbackend_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// BenchmarkClaimVsRawInsert measures anarchon's plain claim against the
// bare INSERT … ON CONFLICT DO NOTHING it is built on, on the same server
// and pool in the same run, alternating them, and reports the ratio
// (claim/raw).
func BenchmarkClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	ctx := context.Background()
	if err := be.PrepareJob(ctx, "bench", 100); err != nil {
		b.Fatal(err)
	}
	pool := be.Pool()
	raw := `"` + schema + `".raw_claims`
	if _, err := pool.Exec(ctx, `CREATE TABLE `+raw+` (job TEXT NOT NULL, slot BIGINT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`); err != nil {
		b.Fatal(err)
	}
	ins := `INSERT INTO ` + raw + ` (job, slot, token) VALUES ($1, $2, $3) ON CONFLICT (job, slot) DO NOTHING`
	var rawD, claimD time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		tag, err := pool.Exec(ctx, ins, "bench", int64(i), tok)
		if err != nil || tag.RowsAffected() != 1 {
			b.Fatal(tag, err)
		}
		t1 := time.Now()
		ok, err := be.Claim(ctx, anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		claimD += time.Since(t1)
		rawD += t1.Sub(t0)
	}
	report(b, rawD, claimD)
}

// BenchmarkLeaseClaimVsRawInsert does the same for the lease claim (one
// transaction with an advisory lock and a row lock).
func BenchmarkLeaseClaimVsRawInsert(b *testing.B) {
	schema := freshSchema(b)
	be := open(b, 1, 2, schema)[0]
	ctx := context.Background()
	if err := be.Init(ctx); err != nil {
		b.Fatal(err)
	}
	pool := be.Pool()
	raw := `"` + schema + `".raw_claims`
	if _, err := pool.Exec(ctx, `CREATE TABLE `+raw+` (job TEXT NOT NULL, slot BIGINT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (job, slot))`); err != nil {
		b.Fatal(err)
	}
	ins := `INSERT INTO ` + raw + ` (job, slot, token) VALUES ($1, $2, $3) ON CONFLICT (job, slot) DO NOTHING`
	rs := be.Runs()
	var rawD, claimD time.Duration
	for i := 0; b.Loop(); i++ {
		tok := strconv.Itoa(i)
		t0 := time.Now()
		if _, err := pool.Exec(ctx, ins, "bench", int64(i), tok); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: "bench", Slot: int64(i), Token: tok, InstanceID: "a"}, Lease: time.Minute, AllowOverlap: true})
		if err != nil || out.Kind != anarchon.OutcomeWon {
			b.Fatal(out, err)
		}
		claimD += time.Since(t1)
		rawD += t1.Sub(t0)
	}
	report(b, rawD, claimD)
}

func report(b *testing.B, raw, claim time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(claim.Nanoseconds())/n, "claim-ns/op")
	b.ReportMetric(float64(claim)/float64(raw), "claim/raw")
}
