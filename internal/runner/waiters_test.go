package runner

import (
	"fmt"
	"testing"
)

// A slot's waiters are woken while registered, whichever of them is
// removed first (every order: the first waiter and the others are kept
// apart), and the slot leaves the map with its last waiter.
func TestWaitersAddRemove(t *testing.T) {
	woken := func(x *waiter) bool {
		select {
		case <-x.ch:
			return true
		default:
			return false
		}
	}
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			var ws waiters
			k, other := slotKey{"j", 1}, slotKey{"j", 2}
			w := []*waiter{newWaiter(), newWaiter(), newWaiter()}
			registered := map[*waiter]bool{}
			for _, x := range w {
				ws.add(k, x)
				registered[x] = true
			}
			elsewhere := newWaiter()
			ws.add(other, elsewhere)
			ws.remove(k, newWaiter()) // not registered: nothing changes
			for _, removed := range order {
				ws.remove(k, w[removed])
				registered[w[removed]] = false
				ws.notify(k, true)
				for i, x := range w {
					if got := woken(x); got != registered[x] {
						t.Fatalf("after removing waiter %d: waiter %d woken %v, want %v", removed, i, got, registered[x])
					}
					if registered[x] && !x.settled.Load() {
						t.Fatalf("waiter %d woken by a finished event is not marked settled", i)
					}
				}
			}
			if _, ok := ws.m[k]; ok {
				t.Fatalf("slot %v still in the map with no waiter", k)
			}
			if woken(elsewhere) || elsewhere.settled.Load() {
				t.Fatal("a waiter on another slot was woken")
			}
			ws.notifyAll()
			if !woken(elsewhere) {
				t.Fatal("notifyAll did not wake the other slot's waiter")
			}
			ws.remove(other, elsewhere)
			if len(ws.m) != 0 {
				t.Fatalf("waiters left: %v", ws.m)
			}
		})
	}
}
