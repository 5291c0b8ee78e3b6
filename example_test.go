package anarchon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// Three instances share one store and the same 50 ms job: each slot runs on
// exactly one of them.
func Example_interval() {
	ctx := context.Background()
	store := membackend.New(nil) // in production: SQLite, PostgreSQL, Redis or NATS
	var runs atomic.Int32
	enough := make(chan struct{})
	tick := func(ctx context.Context, run *anarchon.Run) error {
		if runs.Add(1) == 6 {
			close(enough)
		}
		return nil
	}
	var instances []*anarchon.Scheduler
	for _, id := range []string{"web-1", "web-2", "web-3"} {
		s := anarchon.New(store, &anarchon.Options{InstanceID: id, Logger: slog.New(slog.DiscardHandler)})
		if err := s.Every("tick", 50*time.Millisecond, tick, &anarchon.JobOptions{NoLease: true}); err != nil {
			panic(err)
		}
		if err := s.Start(ctx); err != nil {
			panic(err)
		}
		instances = append(instances, s)
	}
	<-enough
	for _, s := range instances {
		s.Stop(ctx)
	}
	history, _ := instances[0].History(ctx, "tick", 0)
	perSlot := map[time.Time]int{}
	for _, r := range history {
		perSlot[r.Slot]++
	}
	most := 0
	for _, n := range perSlot {
		most = max(most, n)
	}
	fmt.Println("slots run:", len(perSlot) >= 6, "- most runs of one slot:", most)
	// Output: slots run: true - most runs of one slot: 1
}

// A cron job in a time zone. Its slots are wall times in that zone; the
// European spring change on 29 March 2026 moves 09:00 Athens from 07:00 to
// 06:00 UTC.
func Example_cron() {
	s := anarchon.New(membackend.New(nil), nil)
	report := func(ctx context.Context, run *anarchon.Run) error { return nil }
	err := s.Cron("weekday-report", "0 9 * * MON-FRI", report, &anarchon.JobOptions{Zone: "Europe/Athens"})
	if err != nil {
		panic(err)
	}
	slots, _ := s.NextSlots("weekday-report", time.Date(2026, 3, 26, 12, 0, 0, 0, time.UTC), 3)
	for _, slot := range slots {
		fmt.Println(slot.Format(time.RFC3339))
	}
	// Output:
	// 2026-03-27T07:00:00Z
	// 2026-03-30T06:00:00Z
	// 2026-03-31T06:00:00Z
}

// RunNow runs a job at once on this instance; History shows runs from every
// instance, newest first.
func Example_runNowAndHistory() {
	ctx := context.Background()
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "ops-1", Logger: slog.New(slog.DiscardHandler)})
	calls := 0
	err := s.Every("reindex", time.Hour, func(ctx context.Context, run *anarchon.Run) error {
		calls++
		if calls == 2 {
			return errors.New("index locked")
		}
		return nil
	}, nil)
	if err != nil {
		panic(err)
	}
	for range 2 {
		if _, err := s.RunNow(ctx, "reindex"); err != nil {
			panic(err)
		}
	}
	history, err := s.History(ctx, "reindex", 10)
	if err != nil {
		panic(err)
	}
	for _, r := range history {
		fmt.Println(r.InstanceID, r.Status, r.Manual, r.Error)
	}
	// Output:
	// ops-1 error true index locked
	// ops-1 success true
}

// Registration errors carry a stable code.
func Example_validationError() {
	s := anarchon.New(membackend.New(nil), nil)
	err := s.Cron("bad", "*/90 * * * *", func(context.Context, *anarchon.Run) error { return nil }, nil)
	var ve *anarchon.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Code, ve.Field)
	}
	// Output: bad_cron Schedule
}

// Job control acts on every instance through the store: an operator's
// process (here a scheduler that registers the job but is not started)
// pauses the job, asks the cluster to run it once anyway, and resumes it.
// The run happens on a started instance, not in the asking process.
func Example_pauseTriggerResume() {
	ctx := context.Background()
	store := membackend.New(nil) // every instance and the operator share it
	quiet := slog.New(slog.DiscardHandler)
	export := func(ctx context.Context, run *anarchon.Run) error { return nil }

	worker := anarchon.New(store, &anarchon.Options{InstanceID: "web-1", Logger: quiet})
	if err := worker.Every("export", time.Hour, export, nil); err != nil {
		panic(err)
	}
	if err := worker.Start(ctx); err != nil {
		panic(err)
	}
	defer worker.Stop(ctx)

	ops := anarchon.New(store, &anarchon.Options{InstanceID: "ops", Logger: quiet})
	if err := ops.Every("export", time.Hour, export, nil); err != nil {
		panic(err)
	}
	st, err := ops.Pause(ctx, "export", anarchon.PauseOptions{By: "alice", Reason: "migrating the bucket"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", st.Paused, "by", st.By, "-", st.Reason)

	// A trigger runs even while the job is paused; one key runs it once.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rec, err := ops.Trigger(wctx, "export", "backfill-2026-12-01")
	if err != nil {
		panic(err)
	}
	fmt.Println("triggered run:", rec.State, "on", rec.InstanceID, "-", rec.Status)

	st, err = ops.Resume(ctx, "export", anarchon.ResumeOptions{By: "alice"})
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", st.Paused, "by", st.By)
	// Output:
	// paused: true by alice - migrating the bucket
	// triggered run: done on web-1 - success
	// paused: false by alice
}
