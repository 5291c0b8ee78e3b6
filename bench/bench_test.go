package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

func TestSummarize(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name          string
		in            []time.Duration
		p50, p99, max time.Duration
	}{
		{"empty", nil, 0, 0, 0},
		{"one", []time.Duration{ms(5)}, ms(5), ms(5), ms(5)},
		{"unsorted", []time.Duration{ms(3), ms(1), ms(2)}, ms(2), ms(3), ms(3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.in)
			if s.P50 != tc.p50 || s.P99 != tc.p99 || s.Max != tc.max {
				t.Fatalf("Summarize = %+v, want p50 %v p99 %v max %v", s, tc.p50, tc.p99, tc.max)
			}
		})
	}
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, ms(i))
	}
	if s := Summarize(hundred); s.P50 != ms(50) || s.P99 != ms(99) {
		t.Fatalf("1..100 ms: p50 %v p99 %v, want 50ms 99ms", s.P50, s.P99)
	}
}

func TestWrapForwardsAndCounts(t *testing.T) {
	ctx := context.Background()
	mem := membackend.New(nil)
	w, watched := Wrap(mem, false)
	if _, ok := watched.(anarchon.Watcher); !ok {
		t.Fatal("Wrap(hideWatcher=false) hid the memory store's Watcher")
	}
	_, hidden := Wrap(mem, true)
	if _, ok := hidden.(anarchon.Watcher); ok {
		t.Fatal("Wrap(hideWatcher=true) still exposes a Watcher")
	}
	if rs := hidden.(anarchon.LeaseBackend).Runs(); rs == nil {
		t.Fatal("the wrapped backend lost its RunStore")
	} else if _, ok := rs.(anarchon.Watcher); ok {
		t.Fatal("the wrapped RunStore exposes a Watcher")
	}
	in := anarchon.ClaimInput{Job: "j", Slot: 1, Token: rand.Text(), InstanceID: "a", HistorySize: 10}
	if won, err := watched.Claim(ctx, in); err != nil || !won {
		t.Fatalf("Claim = %v, %v; want true", won, err)
	}
	if got := w.Count(OpClaim); got != 1 {
		t.Fatalf("Count(OpClaim) = %d, want 1", got)
	}
	w.Crash()
	in.Slot, in.Token = 2, rand.Text()
	if _, err := watched.Claim(ctx, in); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Claim after Crash: err %v, want ErrCrashed", err)
	}
}

func TestRawMemory(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, "memory", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, err := st.Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if won, _ := raw.Claim(ctx, "j", 1, "a"); !won {
		t.Fatal("first raw claim lost")
	}
	if won, _ := raw.Claim(ctx, "j", 1, "b"); won {
		t.Fatal("second raw claim of the same slot won")
	}
}

func TestOpenStoreUnknown(t *testing.T) {
	if _, err := OpenStore(context.Background(), "nosuch", t.TempDir()); err == nil {
		t.Fatal("OpenStore(nosuch) returned no error")
	}
}

// serverVar names each server store's variable.
var serverVar = map[string]string{
	"postgres": "ANARCHON_TEST_POSTGRES_URL",
	"redis":    "ANARCHON_TEST_REDIS_ADDR",
	"nats":     "ANARCHON_TEST_NATS_URL",
	"mysql":    "ANARCHON_TEST_MYSQL_DSN",
}

// openForTest opens a store for a test: server stores skip without their
// variable, or fail under CI=true.
func openForTest(tb testing.TB, name string) *Store {
	tb.Helper()
	if v, ok := serverVar[name]; ok && os.Getenv(v) == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set (CI=true): start scripts/services/%s.sh", v, name)
		}
		tb.Skipf("set %s to run against %s (scripts/services/%s.sh prints it)", v, name, name)
	}
	st, err := OpenStore(context.Background(), name, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	return st
}

// TestContestOneWinner races a few instances for 20 slots on every store
// and checks that each slot had exactly one winner: the harness's own
// check works, and the stores keep the rule.
func TestContestOneWinner(t *testing.T) {
	for _, name := range []string{"memory", "sqlite", "postgres", "mysql", "redis", "nats"} {
		t.Run(name, func(t *testing.T) {
			st := openForTest(t, name)
			for _, kind := range []string{KindClaim, KindLease} {
				r, err := Contest(context.Background(), st, kind, 4, 0)
				if err != nil {
					t.Fatal(err)
				}
				if r.Slots < 20 || r.BadSlots != 0 || r.Errors != 0 {
					t.Fatalf("%s: %+v; want 20 slots, none without exactly one winner, no errors", kind, r)
				}
			}
		})
	}
}

// BenchmarkClaim times the raw operation, Backend.Claim and RunStore.Claim
// on each store, one fresh slot per call: go test -bench Claim ./bench/
func BenchmarkClaim(b *testing.B) {
	for _, name := range []string{"memory", "sqlite", "postgres", "mysql", "redis", "nats"} {
		b.Run(name, func(b *testing.B) {
			st := openForTest(b, name)
			ctx := context.Background()
			raw, err := st.Raw(ctx)
			if err != nil {
				b.Fatal(err)
			}
			be, err := st.Open(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.Init(ctx); err != nil {
				b.Fatal(err)
			}
			job := fmt.Sprintf("bench-%d", uniq())
			if err := be.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 100}); err != nil {
				b.Fatal(err)
			}
			var slot atomic.Int64
			in := func() anarchon.ClaimInput {
				return anarchon.ClaimInput{Job: job, Slot: slot.Add(1), Token: rand.Text(), InstanceID: "b", HistorySize: 100}
			}
			b.Run("raw", func(b *testing.B) {
				for b.Loop() {
					c := in()
					if _, err := raw.Claim(ctx, c.Job, c.Slot, c.Token); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("claim", func(b *testing.B) {
				for b.Loop() {
					if _, err := be.Claim(ctx, in()); err != nil {
						b.Fatal(err)
					}
				}
			})
			lb, ok := be.(anarchon.LeaseBackend)
			if !ok {
				return
			}
			b.Run("lease", func(b *testing.B) {
				for b.Loop() {
					rc := anarchon.RunClaim{ClaimInput: in(), Lease: 30 * time.Second, AllowOverlap: true, MaxAttempts: 3}
					if _, err := lb.Runs().Claim(ctx, rc); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// ServerCPU finds this test process by its name and counts the CPU it
// spends: at least what getrusage counts for it, less a tick's rounding.
func TestServerCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	name := string(b[:len(b)-1])
	before, n := ServerCPU(name)
	if n < 1 {
		t.Fatalf("ServerCPU(%q) found %d processes, want this one", name, n)
	}
	self0 := CPUTime()
	for x := 0; CPUTime()-self0 < 200*time.Millisecond; x++ {
		_ = fmt.Sprint(x)
	}
	after, _ := ServerCPU(name)
	if got, want := after-before, CPUTime()-self0; got < want-50*time.Millisecond {
		t.Errorf("ServerCPU grew by %v while this process spent %v", got, want)
	}
	if d, n := ServerCPU("no-such-process-name"); d != 0 || n != 0 {
		t.Errorf("ServerCPU of an absent name = %v, %d; want 0, 0", d, n)
	}
}

// Ms and Us, the tables' formats, keep their unit and precision whatever
// the size of the value: 870 ns is 0.9 µs and 0.001 ms, not 870ns.
func TestTableUnits(t *testing.T) {
	for _, tc := range []struct {
		d      time.Duration
		ms, us string
	}{
		{870 * time.Nanosecond, "0.001", "0.9"},
		{1500 * time.Microsecond, "1.500", "1500.0"},
		{2 * time.Second, "2000.000", "2000000.0"},
		{0, "0.000", "0.0"},
	} {
		if got := Ms(tc.d); got != tc.ms {
			t.Errorf("Ms(%v) = %q, want %q", tc.d, got, tc.ms)
		}
		if got := Us(tc.d); got != tc.us {
			t.Errorf("Us(%v) = %q, want %q", tc.d, got, tc.us)
		}
	}
}
