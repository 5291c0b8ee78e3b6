package anarchontest

import (
	"context"
	"errors"
	"fmt"
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
		job := limitName()
		checkNameClaims(t, open(t, h, 2), job, job[:len(job)-1]+"y") // the same length, differs in the last (ASCII) byte
	})
	if hasLeases {
		t.Run("AtLimit/RunStore", func(t *testing.T) {
			t.Parallel()
			checkNameRuns(t, open(t, h, 2), limitName())
		})
		t.Run("AtLimit/Watch", func(t *testing.T) {
			t.Parallel()
			s := open(t, h, 2)
			job := limitName()
			slot, ch, _ := watchJob(t, s, job)
			a := token()
			want(t, "claim", s.lclaim(0, rclaim(job, slot, a, "a", longLease)), anarchon.OutcomeWon)
			if !s.release(0, job, slot, a) {
				t.Fatal("Release returned false")
			}
			awaitEvent(t, ch, fmt.Sprintf("release event for the %d-byte name", len(job)), func(ev anarchon.RunEvent) bool {
				return ev.Job == job && ev.Slot == slot && ev.Kind == anarchon.RunReleased
			})
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
