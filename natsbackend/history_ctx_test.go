package natsbackend_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/natsbackend"
)

// fillHistory stores n runs of job (a claim and a result each).
func fillHistory(t *testing.T, b anarchon.Backend, job string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		in := anarchon.ClaimInput{Job: job, Slot: int64(i+1) * 1000, Token: "tok-" + strconv.Itoa(i), InstanceID: "a", HistorySize: 10 * n}
		if err := b.(anarchon.ClaimRecorder).RecordClaim(ctx, in); err != nil {
			t.Fatal(err)
		}
		r := anarchon.StoredResult{Slot: in.Slot, Token: in.Token, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: r, HistorySize: 10 * n}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryHonoursContext checks that History stops when its context
// ends: an expired context fails at once, and a context that ends while
// records are read fails promptly; both errors satisfy errors.Is with
// context.DeadlineExceeded.
func TestHistoryHonoursContext(t *testing.T) {
	url := natsURL(t)
	b := openN(t, url, freshOptions(t, url), 1)[0]
	fillHistory(t, b, "ctx", 300)
	if recs, err := b.History(context.Background(), "ctx", 0); err != nil || len(recs) != 300 {
		t.Fatalf("History = %d records, %v; want 300", len(recs), err)
	}

	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	start := time.Now()
	recs, err := b.History(expired, "ctx", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("History(expired ctx) = %d records, %v; want context.DeadlineExceeded", len(recs), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("History(expired ctx) took %v", d)
	}

	short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	start = time.Now()
	recs, err = b.History(short, "ctx", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("History(1 ms ctx) = %d records, %v; want context.DeadlineExceeded", len(recs), err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("History(1 ms ctx) returned after %v", d)
	}

	recs, err = b.History(context.Background(), "ctx", 0)
	if err != nil || len(recs) != 300 {
		t.Fatalf("History = %d records, %v; want 300", len(recs), err)
	}
}

// TestHistoryBoundedWhileWriting checks that History with limit 0 returns
// while another instance keeps saving results of the job: it reads what
// the stream held when the call began, not what arrives meanwhile.
func TestHistoryBoundedWhileWriting(t *testing.T) {
	url := natsURL(t)
	bs := openN(t, url, freshOptions(t, url), 2)
	fillHistory(t, bs[0], "busy", 50)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := anarchon.StoredResult{Slot: int64(1_000_000 + i), Token: "w-" + strconv.Itoa(i), InstanceID: "b", Status: anarchon.StatusSuccess}
			if err := bs[1].SaveResult(context.Background(), anarchon.SaveResultInput{Job: "busy", Result: r, HistorySize: 100_000}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 5 {
		recs, err := bs[0].History(ctx, "busy", 0)
		if err != nil {
			t.Fatalf("History while writing: %v", err)
		}
		if len(recs) < 50 {
			t.Fatalf("History while writing = %d records, want at least 50", len(recs))
		}
	}
}

// historyBehind asks the stream's leader for the job's last record: a
// read that took the stream up to one sequence short of it is behind,
// one that took it to the end is not, and so is any read of a job
// without records. Both ways of asking are checked: the JetStream API's
// message get (the default prefix) and the stream handle's.
func TestHistoryBehind(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "message get", false: "handle"}[fast], func(t *testing.T) {
			defer natsbackend.SetNoFastPath(!fast)()
			_, b := openCounted(t)
			ctx := t.Context()
			fillHistory(t, b, "behind", 2)
			_, last, err := b.HistoryBehind(ctx, "behind", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				job  string
				seq  uint64
				want bool
			}{
				{"behind", 0, true},
				{"behind", last - 1, true},
				{"behind", last, false},
				{"no-records", 0, false},
			} {
				got, _, err := b.HistoryBehind(ctx, c.job, c.seq)
				if err != nil || got != c.want {
					t.Errorf("HistoryBehind(%s, %d) with the last record at %d = %v, %v; want %v", c.job, c.seq, last, got, err, c.want)
				}
			}
		})
	}
}
