package anarchontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
)

// Harness tells [Run] how to make and drive the backend under test.
type Harness struct {
	// New returns n >= 1 handles to ONE fresh, empty store: they share
	// state, as n processes sharing a server would, and each is a separate
	// client or connection where the backend has such a thing. Run calls it
	// once per subtest, from parallel subtests at once, and closes the
	// handles when the subtest ends; New may register its own t.Cleanup to
	// drop what it created (a schema, a key prefix, a bucket). Required.
	New func(t *testing.T, n int) []anarchon.Backend
	// Sleep waits until the store's clock has moved by d: a fake clock
	// advances, a real server sleeps. The suite uses it only where time
	// must pass (lease expiry, history TTL). With a fake clock shared by
	// parallel subtests, Sleep may move every store's clock; the suite keeps
	// leases it needs alive much longer than all its sleeps together.
	// Defaults to time.Sleep.
	Sleep func(d time.Duration)
	// FakeClock reports that Sleep drives a fake clock, so the suite does
	// not compare the store's clock ([anarchon.ServerClock]) with time.Now
	// and may use long durations cheaply. Defaults to false.
	FakeClock bool
	// Lease is the lease length of the expiry tests; the suite sleeps about
	// twice this per such test. Short for real servers. Defaults to 300ms.
	Lease time.Duration
	// Racers is how many goroutines contend in the race tests, spread over
	// several handles. Defaults to 16 (8 with -short).
	Racers int
	// Rounds is how many contested slots each race test claims. Defaults
	// to 200 (50 with -short).
	Rounds int
	// Handles is how many handles the race tests spread their racers
	// over, each a client of its own: a server backend sets it to Racers
	// to race that many connections. Defaults to 4 (at most Racers).
	Handles int
	// Break, if set, breaks the store under handle b for job as an
	// operator's mistake would: it drops a table, deletes a stream, or
	// writes a key of the wrong type, so that b's History(job) fails with
	// an error a retry cannot fix. The "Errors/Broken" test calls it and
	// expects that error marked [anarchon.Permanent]. Nil skips the test.
	Break func(t *testing.T, b anarchon.Backend, job string)
	// Timeout bounds each subtest, so that a backend that never answers
	// fails instead of hanging. When a subtest has run for Timeout, the
	// context of its backend calls is cancelled (a call that honours it
	// fails the subtest with the call's name); if the subtest has still
	// not ended a tenth of Timeout later, the suite prints every
	// goroutine's stack and panics with the subtest's name. Defaults to 2
	// minutes.
	Timeout time.Duration
	// Reopen, for a persistent store, returns a new handle to the store
	// that old (already closed) was a handle of, as a restarted process
	// would open it. The Control/Reopen test checks that job control state
	// and trigger requests survive. nil (a store that keeps nothing
	// after Close) skips that test.
	Reopen func(t *testing.T, old anarchon.Backend) anarchon.Backend
	// NoFence says the store gives no fencing tokens: every
	// ClaimOutcome.Fence it returns is 0. The "RunStore/Fence" tests
	// then check that it is 0; without NoFence they check that every
	// win's fence is above all earlier wins of the job (SPEC §6,
	// "Fencing"). Every built-in store gives fences.
	NoFence bool
}

// longLease is the lease of runs that must stay live during a test. It
// exceeds every sleep of the suite together, even on a shared fake clock.
const longLease = time.Hour

// watchWait bounds the wait for a watch event.
const watchWait = 5 * time.Second

func (h Harness) withDefaults() Harness {
	if h.Sleep == nil {
		h.Sleep = time.Sleep
	}
	if h.Lease <= 0 {
		h.Lease = 300 * time.Millisecond
	}
	if h.Racers <= 0 {
		h.Racers = 16
		if testing.Short() {
			h.Racers = 8
		}
	}
	if h.Rounds <= 0 {
		h.Rounds = 200
		if testing.Short() {
			h.Rounds = 50
		}
	}
	if h.Handles <= 0 {
		h.Handles = 4
	}
	h.Handles = min(h.Handles, h.Racers)
	if h.Timeout <= 0 {
		h.Timeout = 2 * time.Minute
	}
	return h
}

// expiry is how long the suite sleeps for a lease of h.Lease to expire.
func (h Harness) expiry() time.Duration { return 2*h.Lease + 50*time.Millisecond }

// Run runs the conformance suite of SPEC §8 against the backend that h
// makes. It always runs the plain-claim and history tests; the lease tests
// run if the handles implement [anarchon.LeaseBackend], the watch test if
// their RunStore or the backend implements [anarchon.Watcher], and the clock
// test if either implements [anarchon.ServerClock].
//
// Subtests have stable names (for example "Claim/Race",
// "RunStore/Claim/ExpiredTakeover"), each on a fresh store from h.New. The
// groups run one after the other and the tests inside a group in parallel;
// Run returns when all have finished, so a server the caller stops with
// defer outlives them.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("anarchontest: Harness.New is nil")
	}
	h = h.withDefaults()

	// Probe one store for the optional interfaces, found as the scheduler
	// finds them (anarchon.As).
	probe := h.New(t, 1)
	if len(probe) != 1 {
		t.Fatalf("anarchontest: Harness.New(t, 1) returned %d handles", len(probe))
	}
	_, hasLeases := probe[0].(anarchon.LeaseBackend)
	has := abilities{
		registry: hasAbility[anarchon.InstanceRegistry](probe[0]),
		control:  hasAbility[anarchon.JobControl](probe[0]),
		triggers: hasAbility[anarchon.TriggerStore](probe[0]),
		cancel:   hasAbility[anarchon.TriggerCanceler](probe[0]),
		watcher:  hasAbility[anarchon.Watcher](probe[0]),
		batch:    hasAbility[anarchon.BatchClaimer](probe[0]),
		runBatch: hasAbility[anarchon.RunBatchClaimer](probe[0]),
		beats:    hasAbility[anarchon.HeartbeatBatcher](probe[0]),
		results:  hasAbility[anarchon.ResultBatcher](probe[0]),
		records:  hasRecordBatch(probe[0]),
		finishes: hasAbility[anarchon.FinishBatcher](probe[0]),
	}
	_ = probe[0].Close(t.Context())

	t.Run("Basics", func(t *testing.T) { testBasics(t, h) })
	t.Run("Claim", func(t *testing.T) { testClaims(t, h) })
	t.Run("History", func(t *testing.T) { testHistory(t, h) })
	t.Run("Close", func(t *testing.T) { testClose(t, h, hasLeases) })
	if hasLeases {
		t.Run("RunStore", func(t *testing.T) { testRunStore(t, h) })
		t.Run("RunStore/Fence", func(t *testing.T) { testFence(t, h, has.runBatch) })
		t.Run("Retry", func(t *testing.T) { testRetries(t, h) })
		t.Run("Backfill", func(t *testing.T) { testBackfill(t, h) })
		t.Run("Replace", func(t *testing.T) { testReplace(t, h) })
	} else {
		t.Log("anarchontest: backend has no RunStore (anarchon.LeaseBackend); lease tests not run")
	}
	t.Run("Names", func(t *testing.T) { testNames(t, h, hasLeases) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, h) })
	t.Run("Early", func(t *testing.T) { testEarly(t, h, hasLeases) })
	t.Run("Bytes", func(t *testing.T) { testBytes(t, h, hasLeases) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, h) })
	t.Run("Watch/Settled", func(t *testing.T) { testWatchSettled(t, h) })
	t.Run("ServerClock", func(t *testing.T) { testServerClock(t, h) })
	t.Run("Batch", func(t *testing.T) {
		if !has.batch {
			t.Skip("backend has no anarchon.BatchClaimer")
		}
		testBatch(t, h, has.control)
	})
	t.Run("RunBatch", func(t *testing.T) {
		if !hasLeases || !has.runBatch {
			t.Skip("backend has no anarchon.RunBatchClaimer")
		}
		testRunBatch(t, h, has.control)
	})
	t.Run("HeartbeatBatch", func(t *testing.T) {
		if !hasLeases || !has.beats {
			t.Skip("backend has no anarchon.HeartbeatBatcher")
		}
		testHeartbeatBatch(t, h)
	})
	t.Run("ResultBatch", func(t *testing.T) {
		if !has.results {
			t.Skip("backend has no anarchon.ResultBatcher")
		}
		testResultBatch(t, h)
	})
	t.Run("ResultBatchJobs", func(t *testing.T) {
		if !has.results {
			t.Skip("backend has no anarchon.ResultBatcher")
		}
		testResultBatchJobs(t, h)
	})
	t.Run("RecordBatch", func(t *testing.T) {
		if !has.records {
			t.Skip("backend's ClaimRecorder has no anarchon.ClaimRecordBatcher")
		}
		testRecordBatch(t, h)
	})
	t.Run("FinishBatch", func(t *testing.T) {
		if !hasLeases || !has.finishes {
			t.Skip("backend has no anarchon.FinishBatcher")
		}
		testFinishBatch(t, h)
	})
	t.Run("FinishBatchJobs", func(t *testing.T) {
		if !hasLeases || !has.finishes {
			t.Skip("backend has no anarchon.FinishBatcher")
		}
		testFinishBatchJobs(t, h)
	})
	t.Run("Registry", func(t *testing.T) {
		if !has.registry {
			t.Skip("backend has no anarchon.InstanceRegistry")
		}
		testRegistry(t, h)
	})
	t.Run("Control", func(t *testing.T) {
		if !has.control {
			t.Skip("backend has no anarchon.JobControl")
		}
		testControl(t, h, hasLeases, has.triggers)
	})
	t.Run("Trigger", func(t *testing.T) {
		if !has.triggers {
			t.Skip("backend has no anarchon.TriggerStore")
		}
		testTriggers(t, h, has)
	})
}

// abilities are the optional interfaces a store's handles have, probed
// once per Run.
type abilities struct {
	registry, control, triggers, watcher bool
	cancel                               bool
	batch, runBatch, beats               bool
	results, finishes, records           bool
}

// hasRecordBatch reports whether b's ClaimRecorder has RecordClaims, the
// one place the scheduler looks for it.
func hasRecordBatch(b anarchon.Backend) bool {
	cr, _ := anarchon.As[anarchon.ClaimRecorder](b)
	_, ok := cr.(anarchon.ClaimRecordBatcher)
	return ok
}

// hasAbility reports whether b has ability T, found with anarchon.As.
func hasAbility[T any](b anarchon.Backend) bool {
	_, ok := anarchon.As[T](b)
	return ok
}

// store is one fresh store under test, as n handles.
type store struct {
	t   *testing.T
	h   Harness
	bs  []anarchon.Backend
	ctx context.Context // of every backend call; the watchdog cancels it
}

// open makes a fresh store of n handles, initialises each and closes them
// all when t ends. A watchdog bounds the rest of t by h.Timeout.
func open(t *testing.T, h Harness, n int) *store {
	t.Helper()
	ctx := watchdog(t, h.Timeout)
	bs := h.New(t, n)
	if len(bs) != n {
		t.Fatalf("Harness.New(t, %d) returned %d handles", n, len(bs))
	}
	t.Cleanup(func() {
		for i, b := range bs {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := b.Close(ctx); err != nil && !errors.Is(err, anarchon.ErrClosed) {
				t.Errorf("handle %d: Close: %v", i, err)
			}
			cancel()
		}
	})
	for i, b := range bs {
		if err := b.Init(ctx); err != nil {
			t.Fatalf("handle %d: Init: %v", i, err)
		}
	}
	return &store{t: t, h: h, bs: bs, ctx: ctx}
}

// watchdog returns a context for t's backend calls that ends when t ends or
// after d, with an error naming the test. If t has not ended d/10 after
// that, it prints every goroutine's stack to stderr and panics: a backend
// call that ignores its context would otherwise hang the test binary until
// go test's own -timeout, without saying which test waited.
func watchdog(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan struct{})
	var mu sync.Mutex // held by the cleanup, so Errorf never follows the test's end
	ended := false
	start := time.Now()
	name := t.Name()
	go func() {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
		}
		err := fmt.Errorf("anarchontest: %s ran for %v (Harness.Timeout): the backend did not answer; cancelling its calls", name, d)
		mu.Lock()
		if !ended {
			t.Error(err)
		}
		mu.Unlock()
		cancel(err)
		timer.Reset(d / 10)
		select {
		case <-done:
			return
		case <-timer.C:
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "anarchontest: %s: goroutines after %v:\n%s\n", name, time.Since(start).Round(time.Millisecond), buf)
		panic(fmt.Sprintf("anarchontest: %s did not end within %v (Harness.Timeout), nor %v after the context of its backend calls was cancelled: a backend call ignores its context and never returns", name, d, d/10))
	}()
	// Registered first, so it runs after the cleanups that close the
	// handles: a Close that hangs is caught too.
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		mu.Unlock()
		close(done)
		cancel(nil)
	})
	return ctx
}

// prepare calls PrepareJob on every handle, as every instance's Start does.
func (s *store) prepare(job string, historySize int) {
	s.t.Helper()
	for i, b := range s.bs {
		if err := b.PrepareJob(s.ctx, anarchon.PrepareJobInput{Job: job, HistorySize: historySize}); err != nil {
			s.t.Fatalf("handle %d: PrepareJob(%q, %d): %v", i, job, historySize, err)
		}
	}
}

// b returns handle i modulo the number of handles.
func (s *store) b(i int) anarchon.Backend { return s.bs[i%len(s.bs)] }

// claim claims on handle i and fails the test on an error. As the
// scheduler does, it calls RecordClaim after a win if the backend has it.
func (s *store) claim(i int, in anarchon.ClaimInput) bool {
	s.t.Helper()
	ok, err := s.b(i).Claim(s.ctx, in)
	if err != nil {
		s.t.Fatalf("handle %d: Claim(%s): %v", i, fmtIn(in), err)
	}
	if ok {
		s.recordClaim(i, in)
	}
	return ok
}

// recordClaim calls RecordClaim on handle i if the backend implements
// anarchon.ClaimRecorder.
func (s *store) recordClaim(i int, in anarchon.ClaimInput) {
	s.t.Helper()
	if cr, ok := s.b(i).(anarchon.ClaimRecorder); ok {
		if err := cr.RecordClaim(s.ctx, in); err != nil {
			s.t.Fatalf("handle %d: RecordClaim(%s): %v", i, fmtIn(in), err)
		}
	}
}

func (s *store) save(i int, job string, r anarchon.StoredResult, size int, ttl time.Duration) {
	s.t.Helper()
	if err := s.b(i).SaveResult(s.ctx, anarchon.SaveResultInput{Job: job, Result: r, HistorySize: size, HistoryTTL: ttl}); err != nil {
		s.t.Fatalf("handle %d: SaveResult(%q, slot %d, token %s): %v", i, job, r.Slot, r.Token, err)
	}
}

func (s *store) history(i int, job string, limit int) []anarchon.RunRecord {
	s.t.Helper()
	recs, err := s.b(i).History(s.ctx, job, limit)
	if err != nil {
		s.t.Fatalf("handle %d: History(%q, %d): %v", i, job, limit, err)
	}
	return recs
}

// now is the store's time: ServerTime where the backend has a clock,
// time.Now otherwise.
func (s *store) now() time.Time {
	s.t.Helper()
	if sc, ok := anarchon.As[anarchon.ServerClock](s.b(0)); ok {
		st, err := sc.ServerTime(s.ctx)
		if err != nil {
			s.t.Fatalf("ServerTime: %v", err)
		}
		return st
	}
	return time.Now()
}

// randHex returns n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// jobName returns a job name unique to this run of the suite.
func jobName(base string) string { return base + "-" + randHex(6) }

// oddJobName returns a unique 200-character job name with quotes, a
// backslash, braces (Redis hash tags), dots, wildcards and spaces (NATS
// subjects), SQL LIKE and format characters, and non-ASCII letters, so that
// every way a backend turns a name into a key is exercised.
func oddJobName() string {
	name := `odd "job" 'name' \ {tag} a.b.* > %_ ;-- Ωμέγα 日本語 ✓ ` + randHex(6) + " "
	for utf8.RuneCountInString(name) < 200 {
		name += "é"
	}
	return name
}

func token() string { return randHex(12) }

// input builds a ClaimInput keeping 100 records of history.
func input(job string, slot int64, tok, inst string) anarchon.ClaimInput {
	return anarchon.ClaimInput{Job: job, Slot: slot, Token: tok, InstanceID: inst, HistorySize: 100}
}

func fmtIn(in anarchon.ClaimInput) string {
	var sb strings.Builder
	sb.WriteString("job ")
	sb.WriteString(quote(in.Job))
	sb.WriteString(", slot ")
	sb.WriteString(time.UnixMilli(in.Slot).UTC().Format(time.RFC3339Nano))
	sb.WriteString(", token ")
	sb.WriteString(in.Token)
	return sb.String()
}

func quote(s string) string {
	if len(s) > 40 {
		return "\"" + s[:20] + "…\""
	}
	return "\"" + s + "\""
}

// baseSlot is a whole minute near now, Unix ms; slots are baseSlot+k·1000.
//
// It lies 20 minutes in the past, so that the slots a test derives from it
// (up to a few minutes later) are due by the store's clock: a store refuses
// the claim of a slot its clock has not reached (SPEC §4, never early).
func baseSlot() int64 { return time.Now().Truncate(time.Minute).Add(-20 * time.Minute).UnixMilli() }

// ms truncates t to milliseconds, the precision every backend keeps.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// sameMs reports whether a and b are the same instant to the millisecond.
func sameMs(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}
