package natsbackend_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

// slowLink is the backend as an instance behind a slow, then broken, link
// sees it: the answer to a won lease claim comes back answerDelay after
// the server granted the lease, and from then on no heartbeat comes back
// (a black-holed connection) until the call's context ends. The server is
// real; only the way back is slow.
type slowLink struct {
	*natsbackend.Backend
	answerDelay time.Duration
}

func (s slowLink) Runs() anarchon.RunStore {
	return &slowRuns{RunStore: s.Backend.Runs(), delay: s.answerDelay}
}

type slowRuns struct {
	anarchon.RunStore
	delay time.Duration
}

func (r *slowRuns) Claim(ctx context.Context, c anarchon.RunClaim) (anarchon.ClaimOutcome, error) {
	out, err := r.RunStore.Claim(ctx, c)
	if err != nil || out.Kind != anarchon.OutcomeWon {
		return out, err
	}
	t := time.NewTimer(r.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return out, nil
	case <-ctx.Done():
		return anarchon.ClaimOutcome{}, ctx.Err()
	}
}

func (r *slowRuns) Heartbeat(ctx context.Context, _ anarchon.HeartbeatInput) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// TestSlowClaimAnswerStillFences: a holder whose won claim was answered
// 700 ms after the server granted its 1.2 s lease, and whose heartbeats
// never come back, must see its handler cancelled (lease lost) before the
// server lets a backup win the slot. The backup claims every 5 ms through
// a second connection, so it wins as soon as the server's clock says the
// lease ran out.
func TestSlowClaimAnswerStillFences(t *testing.T) {
	url := natsURL(t)
	bs := openN(t, url, freshOptions(t, url), 2)
	const lease = 1200 * time.Millisecond
	const answerDelay = 700 * time.Millisecond
	job := "fence " + randHex(4)

	type ending struct {
		at    time.Time
		cause error
	}
	started := make(chan *anarchon.Run, 1)
	ended := make(chan ending, 1)
	h := func(ctx context.Context, run *anarchon.Run) error {
		select {
		case started <- run:
		default:
			return nil // only the first run is watched
		}
		<-ctx.Done()
		ended <- ending{time.Now(), context.Cause(ctx)}
		return ctx.Err()
	}
	s := anarchon.New(slowLink{bs[0], answerDelay}, &anarchon.Options{InstanceID: "holder", Logger: slog.New(slog.DiscardHandler)})
	if err := s.Every(job, 2*time.Second, h, &anarchon.JobOptions{Lease: lease, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	}()

	var run *anarchon.Run
	select {
	case run = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not start a run in 10 s")
	}
	backup := bs[1].Runs()
	rc := anarchon.RunClaim{
		ClaimInput: anarchon.ClaimInput{Job: job, Slot: run.Slot.UnixMilli(), Token: "backup-" + randHex(4), InstanceID: "backup", HistorySize: 10},
		Lease:      lease, MaxAttempts: 3,
	}
	var wonAt time.Time
	deadline := time.Now().Add(5 * time.Second)
	for wonAt.IsZero() {
		out, err := backup.Claim(t.Context(), rc)
		switch {
		case err != nil:
			t.Fatalf("backup claim: %v", err)
		case out.Kind == anarchon.OutcomeWon:
			wonAt = time.Now()
		case out.Kind != anarchon.OutcomeRunning:
			t.Fatalf("backup claim: outcome %v, want running then won", out.Kind)
		case time.Now().After(deadline):
			t.Fatal("the backup did not win in 5 s")
		default:
			time.Sleep(5 * time.Millisecond) // the backup's poll interval
		}
	}
	var end ending
	select {
	case end = <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder's handler was not cancelled in 5 s")
	}
	if !errors.Is(end.cause, anarchon.ErrLeaseLost) {
		t.Errorf("holder's cause %v, want ErrLeaseLost", end.cause)
	}
	if !end.at.Before(wonAt) {
		t.Errorf("holder cancelled %v after the backup won: the leases overlapped", end.at.Sub(wonAt))
	}
}
