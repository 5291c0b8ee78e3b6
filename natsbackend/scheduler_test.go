package natsbackend_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// TestSchedulers runs three schedulers, each with its own connection, on
// one store: a leased job and a plain one every 200ms. Every slot runs on
// exactly one instance.
func TestSchedulers(t *testing.T) {
	url := natsURL(t)
	o := freshOptions(t, url)
	bs := openN(t, url, o, 3)
	type key struct {
		job  string
		slot time.Time
	}
	var mu sync.Mutex
	runs := map[key][]string{}
	enough := make(chan struct{})
	handler := func(ctx context.Context, r *anarchon.Run) error {
		mu.Lock()
		defer mu.Unlock()
		runs[key{r.Job, r.Slot}] = append(runs[key{r.Job, r.Slot}], r.InstanceID)
		if len(runs) == 12 {
			close(enough)
		}
		return nil
	}
	var scheds []*anarchon.Scheduler
	for i, b := range bs {
		s := anarchon.New(b, &anarchon.Options{InstanceID: "inst-" + string(rune('a'+i)), Logger: slog.New(slog.DiscardHandler)})
		if err := s.Every("leased", 200*time.Millisecond, handler, &anarchon.JobOptions{Lease: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if err := s.Every("plain", 200*time.Millisecond, handler, &anarchon.JobOptions{NoLease: true}); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	for _, s := range scheds {
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Error("fewer than 12 runs in 30s")
	}
	for _, s := range scheds {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	for k, who := range runs {
		if len(who) != 1 {
			t.Errorf("%s slot %v ran on %v, want one instance", k.job, k.slot, who)
		}
	}
	hist, err := scheds[0].History(context.Background(), "leased", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) == 0 {
		t.Error("History of the leased job is empty")
	}
	for _, r := range hist {
		// A slot claimed while the previous run's finish is still on its
		// way is skipped by the overlap rule (SPEC §6): a valid outcome on
		// a loaded machine, unlike a failure or a second run.
		if r.Status != anarchon.StatusSuccess && r.Status != anarchon.StatusRunning && r.Status != anarchon.StatusSkipped {
			t.Errorf("history record %v: status %q", r.Slot, r.Status)
		}
	}
}
