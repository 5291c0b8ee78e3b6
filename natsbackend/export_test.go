package natsbackend

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// SetNoFastPath makes batches use the KV API, one request per key, as
// they do on a JetStream context with an API prefix or a domain; it
// returns the restore.
func SetNoFastPath(off bool) (restore func()) {
	old := noFastPath
	noFastPath = off
	return func() { noFastPath = old }
}

// SetRebindHook makes every rebind call f as it begins (see ready); it
// returns the restore.
func SetRebindHook(f func()) (restore func()) {
	old := rebindHook
	rebindHook = f
	return func() { rebindHook = old }
}

// SetLaggingReplica makes the direct gets of the keys for which lagging
// answers true answer "absent", as a replica behind the leader does; it
// returns the restore.
func SetLaggingReplica(lagging func(key string) bool) (restore func()) {
	old := laggingReplica
	laggingReplica = lagging
	return func() { laggingReplica = old }
}

// MarkRebind makes the next call bind the bucket and the stream again, as
// a call that met no responders does.
func (b *Backend) MarkRebind() { b.rebind.Store(true) }

// StaleClock makes the cached server clock sample older than
// clockMaxAge, so the next question about "now" reads the server clock.
func (b *Backend) StaleClock() {
	b.clk.mu.Lock()
	b.clk.mid = b.clk.mid.Add(-clockMaxAge - time.Second)
	b.clk.mu.Unlock()
}

// NowBounds is nowBounds, for tests.
func (b *Backend) NowBounds(ctx context.Context) (lo, hi time.Time, err error) {
	h, err := b.ready(ctx)
	if err != nil {
		return lo, hi, err
	}
	return b.nowBounds(ctx, h)
}

// HistoryBehind is historyBehind for job's subject against the history
// stream's last sequence now, which it returns too.
func (b *Backend) HistoryBehind(ctx context.Context, job string, seq uint64) (behind bool, lastSeq uint64, err error) {
	h, err := b.ready(ctx)
	if err != nil {
		return false, 0, err
	}
	enc, err := encodeJob(job)
	if err != nil {
		return false, 0, err
	}
	info, err := h.hist.Info(ctx)
	if err != nil {
		return false, 0, err
	}
	lastSeq = info.State.LastSeq
	behind, err = b.historyBehind(ctx, h, b.subject(enc), seq, lastSeq)
	return behind, lastSeq, err
}

// CreateRunOnly writes the run of lease claim c as its create does, and
// nothing after it: the state a claim leaves whose create landed but
// whose answer was lost, so that no step after the create ran.
func (b *Backend) CreateRunOnly(ctx context.Context, c anarchon.RunClaim) error {
	h, err := b.ready(ctx)
	if err != nil {
		return err
	}
	job, err := encodeJob(c.Job)
	if err != nil {
		return err
	}
	_, err = h.kv.Create(ctx, runKey(job, c.Slot), encodeRun(newRun(c)))
	return err
}

// ReadKeys reads keys as getMany does, with one direct get request for
// all of them (multi) or with one KV Get each, side by side; it returns
// how many have a value.
func (b *Backend) ReadKeys(ctx context.Context, keys []string, multi bool) (int, error) {
	h, err := b.ready(ctx)
	if err != nil {
		return 0, err
	}
	var got map[string]kvEntry
	if multi {
		got, err = b.directMulti(ctx, keys)
	} else {
		got, err = b.getEach(ctx, h, keys)
	}
	return len(got), err
}

// SetSideReadFails makes the read of the pause state and job key that a
// lease claim sends beside its run read fail with err; it returns the
// restore.
func SetSideReadFails(err error) (restore func()) {
	old := sideReadFails
	sideReadFails = err
	return func() { sideReadFails = old }
}

// ServerURL returns the test server's URL from ANARCHON_TEST_NATS_URL. It
// skips the test when the variable is unset, or fails it under CI=true.
func ServerURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("ANARCHON_TEST_NATS_URL")
	if url == "" {
		msg := "ANARCHON_TEST_NATS_URL is not set: start a server with scripts/services/nats.sh to run the NATS tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return url
}
