package natsbackend_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestJobKeyContention has many clients, on separate connections, each
// win its own slots of one job at the same moment, with overlap allowed
// and long leases: every won run is listed in the one job key, so every
// claim's compare-and-set of that key races all the others. Every claim
// must be won; none may give up with ErrContention. (The conformance
// suite's fence race once did, 5 claims of 500, when writers that kept
// colliding retried at once.)
func TestJobKeyContention(t *testing.T) {
	url := natsURL(t)
	const clients, each = 48, 4
	bs := openN(t, url, freshOptions(t, url), clients)
	ctx := t.Context()
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()
	job := "contention " + randHex(4)
	var wg sync.WaitGroup
	start := make(chan struct{})
	var mu sync.Mutex
	won := 0
	for c := range clients {
		wg.Go(func() {
			rs := bs[c].Runs()
			<-start
			for k := range each {
				slot := base + int64(c*each+k)*1000
				out, err := rs.Claim(ctx, anarchon.RunClaim{
					ClaimInput:   anarchon.ClaimInput{Job: job, Slot: slot, Token: randHex(8), InstanceID: "c" + strconv.Itoa(c), HistorySize: 10},
					Lease:        time.Hour,
					AllowOverlap: true,
					MaxAttempts:  1,
				})
				if err != nil {
					t.Errorf("client %d slot %d: %v", c, k, err)
					return
				}
				if out.Kind != anarchon.OutcomeWon {
					t.Errorf("client %d slot %d: outcome %v, want won (its own slot)", c, k, out.Kind)
					continue
				}
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if won != clients*each {
		t.Errorf("%d of %d claims won", won, clients*each)
	}
}
