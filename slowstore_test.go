package anarchon_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// lockedStore answers claims after a delay, as a store behind a table
// lock does.
type lockedStore struct {
	*membackend.Backend
	delay time.Duration
}

func (l lockedStore) Claim(ctx context.Context, in anarchon.ClaimInput) (bool, error) {
	time.Sleep(l.delay)
	return l.Backend.Claim(ctx, in)
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// A claim held up longer than SlowStoreCall (a 10 s table lock) leaves a
// WARN naming the job; a quick one leaves none.
func TestSlowClaimLogged(t *testing.T) {
	for _, delay := range []time.Duration{10 * time.Second, 10 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			var logs lockedBuf
			s := anarchon.New(lockedStore{membackend.New(nil), delay}, &anarchon.Options{
				InstanceID: "a", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err := s.Every("job", time.Minute, func(context.Context, *anarchon.Run) error { return nil }, &anarchon.JobOptions{NoLease: true}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			time.Sleep(time.Minute + 11*time.Second)
			stopAll(t, s)
			got := strings.Contains(logs.String(), "slow store call") && strings.Contains(logs.String(), "job=job")
			if got != (delay > anarchon.SlowStoreCall) {
				t.Errorf("claim taking %v: slow-call WARN logged = %v:\n%s", delay, got, logs.String())
			}
		})
	}
}
