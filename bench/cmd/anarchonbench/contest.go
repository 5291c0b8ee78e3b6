package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anarchon/anarchon/bench"
)

func runContest(ctx context.Context, stores []string, workdir string, short bool) error {
	d := 3 * time.Second
	if short {
		d = 500 * time.Millisecond
	}
	t := bench.Table{Head: []string{"store", "claim", "instances", "slots", "slots/s", "claims/s", "slots without exactly one winner", "errors"}}
	err := eachStore(ctx, stores, workdir, func(st *bench.Store) error {
		for _, kind := range []string{bench.KindClaim, bench.KindLease} {
			for _, n := range []int{2, 8, 32} {
				r, err := bench.Contest(ctx, st, kind, n, d)
				if err != nil {
					return err
				}
				op := map[string]string{bench.KindClaim: "Backend.Claim", bench.KindLease: "RunStore.Claim"}[kind]
				t.Add(r.Store, op, r.Instances, r.Slots, fmt.Sprintf("%.0f", r.SlotsPerSec()), fmt.Sprintf("%.0f", r.ClaimsPerSec()), r.BadSlots, r.Errors)
			}
		}
		return nil
	})
	fmt.Print("### Contested claims: N instances race for every slot\n\n")
	fmt.Println(t.String())
	return err
}

func runFailover(ctx context.Context, stores []string, workdir string, short bool) error {
	trials := 5
	if short {
		trials = 2
	}
	t := bench.Table{Head: []string{"store", "event", "watcher", "lease", "trials", "→ backup start, median ms", "max ms", "after lease expiry, median ms"}}
	err := eachStore(ctx, stores, workdir, func(st *bench.Store) error {
		for _, sc := range []string{bench.ScenarioHandOver, bench.ScenarioCrash} {
			for _, watch := range []bool{true, false} {
				cfg := bench.FailoverConfig{Lease: 3 * time.Second, Trials: trials, Watch: watch}
				if sc == bench.ScenarioCrash {
					cfg.Lease = 1500 * time.Millisecond
				}
				trs, err := bench.Failover(ctx, st, sc, cfg)
				if err != nil {
					t.Add(st.Name, sc, watch, cfg.Lease, len(trs), "error: "+err.Error(), "", "")
					continue
				}
				var gaps, after []time.Duration
				redone := 0
				for _, tr := range trs {
					gaps = append(gaps, tr.Gap)
					after = append(after, tr.AfterExpiry)
					redone += tr.Redone
				}
				slices.Sort(gaps)
				slices.Sort(after)
				exp := "—"
				if sc == bench.ScenarioCrash {
					exp = bench.Ms(after[len(after)/2])
				}
				w := "yes"
				switch {
				case !watch:
					w = "hidden (poll 1 s)"
				case !trs[0].Watched:
					w = "none in store (poll 1 s)"
				}
				n := fmt.Sprint(len(trs))
				if redone > 0 {
					n += fmt.Sprintf(" (+%d skipped beside a later slot, run again)", redone)
				}
				t.Add(st.Name, sc, w, cfg.Lease, n, bench.Ms(gaps[len(gaps)/2]), bench.Ms(gaps[len(gaps)-1]), exp)
			}
		}
		return nil
	})
	fmt.Print("### Failover: holder crash or hand-over → backup handler start\n\n")
	fmt.Println(t.String())
	return err
}
