package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anarchon/anarchon/bench"
)

func runClaim(ctx context.Context, stores []string, workdir string, short bool) error {
	cfg := bench.ClaimConfig{Concurrency: []int{1, 4, 16}, PerCell: 3 * time.Second, Rounds: 3}
	rtFor := 3 * time.Second
	if short {
		cfg.PerCell, rtFor = 300*time.Millisecond, time.Second
	}
	lat := bench.Table{Head: []string{"store", "claimers", "op", "p50 µs", "p99 µs", "claims/s", "p50 ×raw", "claims/s ×raw", "errors"}}
	rtt := bench.Table{Head: []string{"store", "path", "won slots", "calls per won slot"}}
	err := eachStore(ctx, stores, workdir, func(st *bench.Store) error {
		res, err := bench.MeasureClaims(ctx, st, cfg)
		if err != nil {
			return err
		}
		raw := map[int]bench.ClaimResult{}
		for _, r := range res {
			if r.Kind == bench.KindRaw {
				raw[r.Conc] = r
			}
		}
		for _, r := range res {
			b := raw[r.Conc]
			op := map[string]string{bench.KindRaw: "raw", bench.KindClaim: "Backend.Claim", bench.KindLease: "RunStore.Claim"}[r.Kind]
			lat.Add(r.Store, r.Conc, op, bench.Us(r.Lat.P50), bench.Us(r.Lat.P99), fmt.Sprintf("%.0f", r.OpsPerSec),
				fmt.Sprintf("%.2f", float64(r.Lat.P50)/float64(b.Lat.P50)), fmt.Sprintf("%.2f", r.OpsPerSec/b.OpsPerSec), r.Errors)
		}
		return countCalls(ctx, st, rtFor, &rtt)
	})
	fmt.Print("### Claim latency and throughput\n\n")
	fmt.Println(lat.String())
	fmt.Print("### Store calls per won slot (one instance, full run path)\n\n")
	fmt.Println(rtt.String())
	return err
}

// runCalls prints only the second table of the claim part: store calls
// per won slot.
func runCalls(ctx context.Context, stores []string, workdir string, short bool) error {
	rtFor := 3 * time.Second
	if short {
		rtFor = time.Second
	}
	rtt := bench.Table{Head: []string{"store", "path", "won slots", "calls per won slot"}}
	err := eachStore(ctx, stores, workdir, func(st *bench.Store) error { return countCalls(ctx, st, rtFor, &rtt) })
	fmt.Print("### Store calls per won slot (one instance, full run path)\n\n")
	fmt.Println(rtt.String())
	return err
}

// countCalls adds st's rows of the calls-per-won-slot table to rtt.
func countCalls(ctx context.Context, st *bench.Store, d time.Duration, rtt *bench.Table) error {
	rts, err := bench.CountRoundTrips(ctx, st, 100*time.Millisecond, d)
	if err != nil {
		return err
	}
	for _, rt := range rts {
		var parts []string
		for op, v := range rt.PerWon {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, v))
		}
		sort.Strings(parts)
		rtt.Add(rt.Store, rt.Path, rt.Slots, strings.Join(parts, ", "))
	}
	return nil
}
