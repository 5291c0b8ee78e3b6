package redisbackend_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
)

// TestClaimRace16Clients: 16 backends, each on a go-redis client (and so a
// connection pool) of its own, claim the same 2,000 slots with their own
// tokens, all at once. Exactly one wins each slot (SPEC §2), and a repeat
// of every winning claim still wins while every loser still loses.
func TestClaimRace16Clients(t *testing.T) {
	const clients, slots = 16, 2000
	addr := redisAddr(t)
	prefix := freshPrefix(t, addr)
	bs := make([]*redisbackend.Backend, clients)
	for i := range bs {
		bs[i] = newBackend(t, addr, prefix, nil)
	}
	job := "race"
	slot0 := time.Now().Truncate(time.Minute).UnixMilli()
	tokens := make([][]string, clients)
	won := make([][]bool, clients)
	for g := range tokens {
		tokens[g] = make([]string, slots)
		won[g] = make([]bool, slots)
		for s := range slots {
			tokens[g][s] = fmt.Sprintf("c%d-s%d-%s", g, s, randToken())
		}
	}
	var errs atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			<-start
			for s := range slots {
				ok, err := bs[g].Claim(t.Context(), anarchon.ClaimInput{
					Job: job, Slot: slot0 + int64(s)*1000, Token: tokens[g][s], InstanceID: fmt.Sprint("c", g), HistorySize: 100,
				})
				if err != nil {
					if errs.Add(1) <= 5 {
						t.Errorf("client %d slot %d: %v", g, s, err)
					}
					continue
				}
				won[g][s] = ok
			}
		})
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	winners := make([]int, slots)
	bad := 0
	for s := range slots {
		n := 0
		for g := range clients {
			if won[g][s] {
				n++
				winners[s] = g
			}
		}
		if n != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("slot %d: %d winners, want 1", s, n)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d slots without exactly one winner", bad, slots)
	}
	t.Logf("%d clients × %d slots: %d claims in %v (%.0f claims/s)", clients, slots, clients*slots, elapsed.Round(time.Millisecond), float64(clients*slots)/elapsed.Seconds())

	// Repeats: the winner's token wins again on any client; a loser's loses.
	for s := 0; s < slots; s += 97 {
		for _, g := range []int{winners[s], (winners[s] + 1) % clients} {
			ok, err := bs[(g+5)%clients].Claim(t.Context(), anarchon.ClaimInput{Job: job, Slot: slot0 + int64(s)*1000, Token: tokens[g][s], InstanceID: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if ok != (g == winners[s]) {
				t.Errorf("slot %d: repeat of client %d's token = %v, want %v", s, g, ok, g == winners[s])
			}
		}
	}
}
