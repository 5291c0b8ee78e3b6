package anarchontest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// limitName returns a unique job name of exactly anarchon.MaxNameLength
// bytes, made like oddJobName's (quotes, braces, dots, wildcards, non-ASCII)
// and filled with 3-byte letters, so that a store meets the longest name
// the scheduler registers in the form it encodes it.
func limitName() string {
	name := `lim "job" 'name' \ {tag} a.b.* > %_ ;-- Ωμέγα ✓ ` + randHex(6) + " "
	for len(name)+len("日") < anarchon.MaxNameLength { // ends in ASCII: see testNames
		name += "日"
	}
	return name + strings.Repeat("x", anarchon.MaxNameLength-len(name))
}

// testNames runs the store with names of anarchon.MaxNameLength bytes: plain
// claims and history, lease runs and watches where the backend has them; and
// checks that a Scheduler on the store refuses a name one byte longer, or
// with a NUL, with anarchon.CodeBadName.
func testNames(t *testing.T, h Harness, hasLeases bool) {
	t.Run("AtLimit/Claim", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 2)
		job := limitName()
		other := job[:len(job)-1] + "y" // the same length, differs in the last (ASCII) byte
		s.prepare(job, 10)
		s.prepare(other, 10)
		slot := baseSlot()
		tok := token()
		if !s.claim(0, input(job, slot, tok, "a")) {
			t.Fatal("first claim lost")
		}
		if s.claim(1, input(job, slot, token(), "b")) {
			t.Error("another token won a claimed slot")
		}
		if !s.claim(1, input(other, slot, token(), "b")) {
			t.Error("two names that differ in their last byte share claims")
		}
		s.save(0, job, anarchon.StoredResult{Slot: slot, Token: tok, InstanceID: "a", Attempt: 1, Status: anarchon.StatusSuccess}, 10, 0)
		recs := s.history(1, job, 0)
		if len(recs) != 1 {
			t.Fatalf("History: %d records, want 1", len(recs))
		}
		if recs[0].Job != job || recs[0].Status != anarchon.StatusSuccess || recs[0].Token != tok {
			t.Errorf("History: job %d bytes, status %q, token %q; want the %d-byte name, %q, %q",
				len(recs[0].Job), recs[0].Status, recs[0].Token, len(job), anarchon.StatusSuccess, tok)
		}
		if recs := s.history(0, other, 0); len(recs) != 1 || recs[0].Job != other {
			t.Errorf("History of the other name: %d records", len(recs))
		}
	})
	if hasLeases {
		t.Run("AtLimit/RunStore", func(t *testing.T) {
			t.Parallel()
			s := open(t, h, 2)
			job := limitName()
			s.prepare(job, 10)
			slot := baseSlot()
			a := token()
			want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
			want(t, "second claim", s.lclaim(1, rclaim(job, slot, token(), "b", longLease)), anarchon.OutcomeRunning)
			if !s.heartbeat(1, job, slot, a, longLease) {
				t.Error("Heartbeat returned false")
			}
			if runs := s.active(1, job); len(runs) != 1 || runs[0].Token != a {
				t.Errorf("Active: %d runs, want the one run of token %s", len(runs), a)
			}
			if !s.finish(1, job, slot, a, anarchon.StatusSuccess) {
				t.Error("Finish returned false")
			}
			want(t, "claim after finish", s.lclaim(0, rclaim(job, slot, token(), "c", longLease)), anarchon.OutcomeDone)
			recs := s.history(1, job, 0)
			if len(recs) == 0 {
				t.Fatal("History: no record")
			}
			for _, r := range recs {
				if r.Job != job {
					t.Errorf("History: a record of a %d-byte job, want the %d-byte name", len(r.Job), len(job))
				}
			}
		})
		t.Run("AtLimit/Watch", func(t *testing.T) {
			t.Parallel()
			s := open(t, h, 2)
			w, ok := anarchon.As[anarchon.Watcher](s.b(1))
			if !ok {
				t.Skip("backend has no anarchon.Watcher")
			}
			job := limitName()
			s.prepare(job, 10)
			slot := baseSlot()
			ctx, cancel := context.WithCancel(s.ctx)
			defer cancel()
			ch, err := w.WatchRuns(ctx)
			if err != nil {
				t.Fatalf("WatchRuns: %v", err)
			}
			a := token()
			want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
			if !s.release(0, job, slot, a) {
				t.Fatal("Release returned false")
			}
			timer := time.NewTimer(watchWait)
			defer timer.Stop()
			for {
				select {
				case ev, ok := <-ch:
					if !ok {
						t.Fatal("watch channel closed")
					}
					if ev.Job == job && ev.Slot == slot && ev.Kind == anarchon.RunReleased {
						return
					}
				case <-timer.C:
					t.Fatalf("no release event for the %d-byte name within %v", len(job), watchWait)
				}
			}
		})
	}
	t.Run("PastLimit", func(t *testing.T) {
		t.Parallel()
		s := open(t, h, 1)
		sched := anarchon.New(s.b(0), &anarchon.Options{InstanceID: "names", Logger: slog.New(slog.DiscardHandler)})
		opts := func() *anarchon.JobOptions {
			// Plain claims and a MaxLate well inside the dedupe window, so
			// that only the name can be refused.
			o := &anarchon.JobOptions{NoLease: true, MaxLate: time.Minute}
			if w := s.b(0).DedupeWindow(); w != anarchon.Forever && w/4 < o.MaxLate {
				o.MaxLate = w / 4
			}
			return o
		}
		noop := func(context.Context, *anarchon.Run) error { return nil }
		job := limitName()
		if err := sched.Every(job, time.Minute, noop, opts()); err != nil {
			t.Fatalf("a name of MaxNameLength (%d) bytes: %v", anarchon.MaxNameLength, err)
		}
		for what, name := range map[string]string{
			"one byte past MaxNameLength": job + "x",
			"a NUL":                       "nul\x00" + randHex(6),
			"a newline":                   "line\n" + randHex(6),
			"invalid UTF-8":               "bad\xff" + randHex(6),
		} {
			err := sched.Every(name, time.Minute, noop, opts())
			var ve *anarchon.ValidationError
			if !errors.As(err, &ve) || ve.Code != anarchon.CodeBadName {
				t.Errorf("a name with %s: %v, want a ValidationError with CodeBadName", what, err)
			}
		}
	})
}
