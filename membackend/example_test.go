package membackend_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Two instances claim the same slot: exactly one wins, and the winner's
// retry with the same token wins again.
func Example() {
	ctx := context.Background()
	store := membackend.New(nil)
	defer store.Close(ctx)

	slot := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	a := anarchon.ClaimInput{Job: "report", Slot: slot, Token: "tok-a", InstanceID: "a"}
	b := anarchon.ClaimInput{Job: "report", Slot: slot, Token: "tok-b", InstanceID: "b"}

	wonA, _ := store.Claim(ctx, a)
	wonB, _ := store.Claim(ctx, b)
	again, _ := store.Claim(ctx, a)
	fmt.Println(wonA, wonB, again)

	_ = store.SaveResult(ctx, anarchon.SaveResultInput{Job: "report", Result: anarchon.StoredResult{
		Slot: slot, Token: "tok-a", InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess,
	}, HistorySize: 10})

	hist, _ := store.History(ctx, "report", 0)
	for _, r := range hist {
		fmt.Println(r.Slot.Format(time.RFC3339), r.InstanceID, r.Status)
	}
	// Output:
	// true false true
	// 2025-01-01T00:00:00Z a success
}

// A lease claim: the first instance wins, a second stands by, and takes
// over at once when the first releases the run.
func ExampleRunStore() {
	ctx := context.Background()
	store := membackend.New(nil)
	defer store.Close(ctx)
	runs := store.Runs()

	claim := func(inst string) anarchon.ClaimOutcome {
		out, err := runs.Claim(ctx, anarchon.RunClaim{
			ClaimInput:  anarchon.ClaimInput{Job: "sync", Slot: 1000, Token: "tok-" + inst, InstanceID: inst},
			Lease:       time.Minute,
			MaxAttempts: 3,
		})
		if err != nil {
			panic(err)
		}
		return out
	}
	fmt.Println(claim("a").Kind)
	out := claim("b")
	fmt.Println(out.Kind, out.Holder)
	ok, _ := runs.Release(ctx, anarchon.ReleaseInput{Job: "sync", Slot: 1000, Token: "tok-a"})
	fmt.Println(ok)
	out = claim("b")
	fmt.Println(out.Kind, out.Attempt)
	// Output:
	// won
	// running a
	// true
	// won 2
}
