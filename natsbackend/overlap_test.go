package natsbackend_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestOverlapRace has 8 clients on separate connections claim 20 slots of
// one job with overlap refused and long leases, each in its own order:
// exactly one slot is won, by one client; every other answer is overlap,
// running (a backup of the winner) or none (a slot already skipped).
func TestOverlapRace(t *testing.T) {
	url := natsURL(t)
	const clients, slots = 8, 20
	bs := openN(t, url, freshOptions(t, url), clients)
	ctx := t.Context()
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli() // due: never early
	job := "overlap " + randHex(4)
	type win struct {
		slot   int64
		client int
	}
	var mu sync.Mutex
	var wins []win
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range clients {
		wg.Go(func() {
			rs := bs[c].Runs()
			order := rand.Perm(slots)
			<-start
			for _, k := range order {
				slot := base + int64(k)*1000
				out, err := rs.Claim(ctx, anarchon.RunClaim{
					ClaimInput:  anarchon.ClaimInput{Job: job, Slot: slot, Token: randHex(8), InstanceID: "c" + strconv.Itoa(c), HistorySize: 10},
					Lease:       time.Hour,
					MaxLate:     time.Hour,
					MaxAttempts: 3,
				})
				if err != nil {
					t.Errorf("client %d slot %d: %v", c, k, err)
					return
				}
				switch out.Kind {
				case anarchon.OutcomeWon:
					mu.Lock()
					wins = append(wins, win{slot, c})
					mu.Unlock()
				case anarchon.OutcomeOverlap, anarchon.OutcomeRunning, anarchon.OutcomeNone:
				default:
					t.Errorf("client %d slot %d: outcome %v", c, k, out.Kind)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d wins %v, want exactly 1 with overlap refused", len(wins), wins)
	}
	act, err := bs[0].Runs().Active(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(act) != 1 || act[0].Slot != wins[0].slot || !act[0].Live {
		t.Errorf("Active = %+v, want the one won slot %d, live", act, wins[0].slot)
	}
}
