package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
)

// Claim kinds measured by [MeasureClaims].
const (
	KindRaw   = "raw"   // the store's bare atomic operation (RawClaimer)
	KindClaim = "claim" // anarchon's plain claim, Backend.Claim
	KindLease = "lease" // anarchon's lease claim, RunStore.Claim
)

// ClaimResult is one cell of the claim-cost table.
type ClaimResult struct {
	Store     string
	Kind      string // KindRaw, KindClaim or KindLease
	Conc      int    // concurrent claimers, each on its own connection
	Lat       Summary
	OpsPerSec float64
	Errors    int64
}

// ClaimConfig says how long to measure.
type ClaimConfig struct {
	Concurrency []int         // e.g. 1, 4, 16
	PerCell     time.Duration // time per (kind, concurrency), split over Rounds
	Rounds      int           // kinds are interleaved round by round, so drift hits all alike
}

// MeasureClaims times the raw operation, Backend.Claim and RunStore.Claim
// on st, each claim on a fresh slot (so every call writes, as the first
// claimer of a slot does). Lease claims use a 30 s lease, no MaxLate and
// AllowOverlap (with overlap skip every fresh slot would meet the previous,
// still running one). The kinds are interleaved in rounds.
func MeasureClaims(ctx context.Context, st *Store, cfg ClaimConfig) ([]ClaimResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1
	}
	var out []ClaimResult
	for _, conc := range cfg.Concurrency {
		if conc <= 0 {
			return nil, fmt.Errorf("bench: concurrency %d is not positive", conc)
		}
		raws := make([]RawClaimer, conc)
		bes := make([]anarchon.Backend, conc)
		for i := range conc {
			var err error
			if raws[i], err = st.Raw(ctx); err != nil {
				return nil, fmt.Errorf("bench: %s raw client: %w", st.Name, err)
			}
			if bes[i], err = st.Open(ctx); err != nil {
				return nil, fmt.Errorf("bench: %s backend: %w", st.Name, err)
			}
			if err := bes[i].Init(ctx); err != nil {
				return nil, fmt.Errorf("bench: %s Init: %w", st.Name, err)
			}
		}
		job := fmt.Sprintf("claimcost-%d-%d", conc, uniq())
		if err := bes[0].PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 100}); err != nil {
			return nil, err
		}
		_, hasRuns := anarchon.As[anarchon.LeaseBackend](bes[0])
		kinds := []string{KindRaw, KindClaim}
		if hasRuns {
			kinds = append(kinds, KindLease)
		}
		lat := map[string][]time.Duration{}
		ops := map[string]int64{}
		errs := map[string]int64{}
		wall := map[string]time.Duration{}
		var slot atomic.Int64
		per := cfg.PerCell / time.Duration(cfg.Rounds)
		for range cfg.Rounds {
			for _, kind := range kinds {
				l, n, e, w := claimRound(ctx, kind, job, raws, bes, &slot, per)
				lat[kind] = append(lat[kind], l...)
				ops[kind] += n
				errs[kind] += e
				wall[kind] += w
			}
		}
		for _, kind := range kinds {
			out = append(out, ClaimResult{
				Store: st.Name, Kind: kind, Conc: conc, Lat: Summarize(lat[kind]),
				OpsPerSec: float64(ops[kind]) / wall[kind].Seconds(), Errors: errs[kind],
			})
		}
	}
	return out, nil
}

func claimRound(ctx context.Context, kind, job string, raws []RawClaimer, bes []anarchon.Backend, slot *atomic.Int64, d time.Duration) ([]time.Duration, int64, int64, time.Duration) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []time.Duration
	var nOps, nErr atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	for i := range raws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			var runs anarchon.RunStore
			if lb, ok := anarchon.As[anarchon.LeaseBackend](bes[i]); ok {
				runs = lb.Runs()
			}
			inst := fmt.Sprintf("bench-%d", i)
			for time.Now().Before(stop) {
				s := slot.Add(1)
				tok := rand.Text()
				in := anarchon.ClaimInput{Job: job, Slot: s, Token: tok, InstanceID: inst, HistorySize: 100}
				t0 := time.Now()
				var won bool
				var err error
				switch kind {
				case KindRaw:
					won, err = raws[i].Claim(ctx, job, s, tok)
				case KindClaim:
					won, err = bes[i].Claim(ctx, in)
				case KindLease:
					var o anarchon.ClaimOutcome
					o, err = runs.Claim(ctx, anarchon.RunClaim{ClaimInput: in, Lease: 30 * time.Second, AllowOverlap: true, MaxAttempts: 3})
					won = o.Kind == anarchon.OutcomeWon
				}
				local = append(local, time.Since(t0))
				if err != nil || !won {
					nErr.Add(1)
					continue
				}
				nOps.Add(1)
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, nOps.Load(), nErr.Load(), time.Since(start)
}

// RoundTrips is the store calls per won slot on the full run path of one
// instance, as counted through a [Wrapped] backend.
type RoundTrips struct {
	Store  string
	Path   string // "plain" or "lease"
	Slots  int64  // won slots
	PerWon map[Op]float64
}

// CountRoundTrips runs one instance with a plain job (NoLease) or a leased
// job (when the store has a RunStore) every interval for d, and counts
// backend calls per won slot. Handlers return at once, so no heartbeat is
// due (lease 30 s, heartbeat every 10 s).
func CountRoundTrips(ctx context.Context, st *Store, interval, d time.Duration) ([]RoundTrips, error) {
	var out []RoundTrips
	for _, path := range []string{"plain", "lease"} {
		be, err := st.Open(ctx)
		if err != nil {
			return nil, err
		}
		if _, ok := anarchon.As[anarchon.LeaseBackend](be); !ok && path == "lease" {
			continue
		}
		w, sb := Wrap(be, false)
		var won atomic.Int64
		s := anarchon.New(sb, &anarchon.Options{InstanceID: "rt", Logger: quietLogger()})
		opts := &anarchon.JobOptions{NoLease: path == "plain"}
		job := fmt.Sprintf("rt-%s-%d", path, uniq())
		if err := s.Every(job, interval, func(context.Context, *anarchon.Run) error { won.Add(1); return nil }, opts); err != nil {
			return nil, err
		}
		if err := s.Start(ctx); err != nil {
			return nil, err
		}
		time.Sleep(d)
		sctx, cancel := deadline(10 * time.Second)
		_ = s.Stop(sctx)
		cancel()
		c := w.Counts()
		n := won.Load()
		rt := RoundTrips{Store: st.Name, Path: path, Slots: n, PerWon: map[Op]float64{}}
		for op := Op(0); op < numOps; op++ {
			if op == OpOther || op == OpServerTime || c[op] == 0 {
				continue
			}
			rt.PerWon[op] = float64(c[op]) / float64(max(n, 1))
		}
		out = append(out, rt)
	}
	return out, nil
}
