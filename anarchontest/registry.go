package anarchontest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// registryTTL is the TTL of the expiry tests: the suite waits about this
// long (by the store's clock) for a record to be listed dead.
const registryTTL = 1500 * time.Millisecond

// registryWait bounds, in real time, the wait for a record to be listed
// dead beyond its TTL.
const registryWait = 30 * time.Second

// clockSlack is the rounding allowed between a record's times and the
// store's clock read through ServerTime: stores keep milliseconds.
const clockSlack = 5 * time.Millisecond

// testRegistry runs the instance registry tests of SPEC §10; Run calls it
// when the backend implements anarchon.InstanceRegistry.
func testRegistry(t *testing.T, h Harness) {
	t.Run("RoundTrip", func(t *testing.T) { t.Parallel(); testRegistryRoundTrip(t, h) })
	t.Run("Renew", func(t *testing.T) { t.Parallel(); testRegistryRenew(t, h) })
	t.Run("Expiry", func(t *testing.T) { t.Parallel(); testRegistryExpiry(t, h) })
	t.Run("Deregister", func(t *testing.T) { t.Parallel(); testRegistryDeregister(t, h) })
	t.Run("Many", func(t *testing.T) { t.Parallel(); testRegistryMany(t, h) })
	t.Run("BadInput", func(t *testing.T) { t.Parallel(); testRegistryBadInput(t, h) })
	t.Run("Closed", func(t *testing.T) { t.Parallel(); testRegistryClosed(t, h) })
	if h.FakeClock {
		// Not parallel: it moves a shared fake clock by a day, which
		// runs before the parallel tests above resume.
		t.Run("Retention", func(t *testing.T) { testRegistryRetention(t, h) })
	}
}

func (s *store) reg(i int) anarchon.InstanceRegistry {
	s.t.Helper()
	r, ok := anarchon.As[anarchon.InstanceRegistry](s.b(i))
	if !ok {
		s.t.Fatalf("handle %d is not an anarchon.InstanceRegistry", i%len(s.bs))
	}
	return r
}

func (s *store) register(i int, info anarchon.InstanceInfo, ttl time.Duration) {
	s.t.Helper()
	if err := s.reg(i).RegisterInstance(s.ctx, info, ttl); err != nil {
		s.t.Fatalf("handle %d: RegisterInstance(%q, %v): %v", i%len(s.bs), info.ID, ttl, err)
	}
}

func (s *store) instances(i int) []anarchon.InstanceRecord {
	s.t.Helper()
	recs, err := s.reg(i).Instances(s.ctx)
	if err != nil {
		s.t.Fatalf("handle %d: Instances: %v", i%len(s.bs), err)
	}
	if !slices.IsSortedFunc(recs, func(a, b anarchon.InstanceRecord) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	}) {
		s.t.Errorf("Instances is not sorted by ID: %v", ids(recs))
	}
	return recs
}

// timedList lists on handle i between two readings of the store's clock.
func (s *store) timedList(i int) (recs []anarchon.InstanceRecord, before, after time.Time) {
	s.t.Helper()
	before = s.now()
	recs = s.instances(i)
	after = s.now()
	return recs, before, after
}

func ids(recs []anarchon.InstanceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func find(recs []anarchon.InstanceRecord, id string) (anarchon.InstanceRecord, bool) {
	for _, r := range recs {
		if r.ID == id {
			return r, true
		}
	}
	return anarchon.InstanceRecord{}, false
}

// mustFind returns the record of id or fails the test.
func mustFind(t *testing.T, recs []anarchon.InstanceRecord, id string) anarchon.InstanceRecord {
	t.Helper()
	r, ok := find(recs, id)
	if !ok {
		t.Fatalf("Instances has no record of %q; it lists %q", id, ids(recs))
	}
	return r
}

// checkJudged fails the test unless rec's state agrees with the store's
// clock, read before and after the list: live only while the store's time
// may still be before ExpiresAt, dead only once it may be after it.
func (s *store) checkJudged(rec anarchon.InstanceRecord, before, after time.Time) {
	s.t.Helper()
	if !hasAbility[anarchon.ServerClock](s.b(0)) {
		return // the store's clock is not readable: nothing to compare with
	}
	switch rec.State {
	case anarchon.InstanceLive:
		if before.After(rec.ExpiresAt.Add(clockSlack)) {
			s.t.Fatalf("%q listed live at store time %v or later, after its ExpiresAt %v",
				rec.ID, before.Format(time.RFC3339Nano), rec.ExpiresAt.Format(time.RFC3339Nano))
		}
	case anarchon.InstanceDead:
		if after.Add(clockSlack).Before(rec.ExpiresAt) {
			s.t.Fatalf("%q listed dead at store time %v or earlier, before its ExpiresAt %v",
				rec.ID, after.Format(time.RFC3339Nano), rec.ExpiresAt.Format(time.RFC3339Nano))
		}
	case anarchon.InstanceStopped:
	default:
		s.t.Fatalf("%q has unknown state %q", rec.ID, rec.State)
	}
}

// checkSeen fails the test unless rec was renewed by the store's clock
// between before and after, with ExpiresAt = LastSeen + ttl.
func (s *store) checkSeen(rec anarchon.InstanceRecord, before, after time.Time, ttl time.Duration) {
	s.t.Helper()
	if rec.TTL != ttl {
		s.t.Errorf("%q: TTL %v, want %v", rec.ID, rec.TTL, ttl)
	}
	if d := rec.ExpiresAt.Sub(rec.LastSeen); d < ttl-clockSlack || d > ttl+clockSlack {
		s.t.Errorf("%q: ExpiresAt - LastSeen = %v, want the TTL %v", rec.ID, d, ttl)
	}
	if !hasAbility[anarchon.ServerClock](s.b(0)) {
		return
	}
	if rec.LastSeen.Before(before.Add(-clockSlack)) || rec.LastSeen.After(after.Add(clockSlack)) {
		s.t.Errorf("%q: LastSeen %v is not the store's time of the registration, between %v and %v",
			rec.ID, rec.LastSeen.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
}

// timedRegister registers on handle i between two readings of the store's
// clock.
func (s *store) timedRegister(i int, info anarchon.InstanceInfo, ttl time.Duration) (before, after time.Time) {
	s.t.Helper()
	before = s.now()
	s.register(i, info, ttl)
	after = s.now()
	return before, after
}

// sampleInfo is an InstanceInfo with every field set, job names and an ID
// that exercise how a store encodes text.
func sampleInfo(id string) anarchon.InstanceInfo {
	jobs := []anarchon.JobFingerprint{
		{Name: "backup", Fingerprint: "0123456789abcdef"},
		{Name: oddJobName(), Fingerprint: "fedcba9876543210"},
		{Name: "report", Fingerprint: "00000000ffffffff"},
	}
	slices.SortFunc(jobs, func(a, b anarchon.JobFingerprint) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return anarchon.InstanceInfo{
		ID:              id,
		Version:         "v1.2.3-0.20260101000000-abcdef012345",
		Host:            "host-ü.example",
		PID:             4242,
		StartedAt:       time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC),
		ClockOffset:     -1234567891 * time.Nanosecond,
		TZDataVersion:   "2025b",
		JobsFingerprint: anarchon.FingerprintJobSet(jobs),
		Jobs:            jobs,
		JobCount:        len(jobs),
	}
}

// oddInstanceID returns a unique instance ID with quotes, dots, braces,
// wildcards, spaces and non-ASCII letters.
func oddInstanceID() string {
	return `web "1" {tag} a.b.* > %_ Ωμέγα ` + randHex(6)
}

// sameInfo reports the first field in which got differs from want.
func sameInfo(got, want anarchon.InstanceInfo) error {
	switch {
	case got.ID != want.ID:
		return fmt.Errorf("field ID: %q, want %q", got.ID, want.ID)
	case got.Version != want.Version:
		return fmt.Errorf("field Version: %q, want %q", got.Version, want.Version)
	case got.Host != want.Host:
		return fmt.Errorf("field Host: %q, want %q", got.Host, want.Host)
	case got.PID != want.PID:
		return fmt.Errorf("field PID: %d, want %d", got.PID, want.PID)
	case !got.StartedAt.Equal(want.StartedAt):
		return fmt.Errorf("field StartedAt: %v, want %v", got.StartedAt.Format(time.RFC3339Nano), want.StartedAt.Format(time.RFC3339Nano))
	case got.ClockOffset != want.ClockOffset:
		return fmt.Errorf("field ClockOffset: %d ns, want %d ns", got.ClockOffset, want.ClockOffset)
	case got.TZDataVersion != want.TZDataVersion:
		return fmt.Errorf("field TZDataVersion: %q, want %q", got.TZDataVersion, want.TZDataVersion)
	case got.JobsFingerprint != want.JobsFingerprint:
		return fmt.Errorf("field JobsFingerprint: %q, want %q", got.JobsFingerprint, want.JobsFingerprint)
	case !slices.Equal(got.Jobs, want.Jobs):
		return fmt.Errorf("field Jobs: %q, want %q", got.Jobs, want.Jobs)
	case got.JobCount != want.JobCount:
		return fmt.Errorf("field JobCount: %d, want %d", got.JobCount, want.JobCount)
	}
	return nil
}

// testRegistryRoundTrip: a record registered on one handle is listed on
// another, live, with every field as given and its times by the store's
// clock.
func testRegistryRoundTrip(t *testing.T, h Harness) {
	s := open(t, h, 2)
	if recs := s.instances(1); len(recs) != 0 {
		t.Fatalf("a fresh store lists %q", ids(recs))
	}
	info := sampleInfo(oddInstanceID())
	before, after := s.timedRegister(0, info, longLease)
	recs := s.instances(1)
	if len(recs) != 1 {
		t.Fatalf("Instances lists %q, want one record", ids(recs))
	}
	rec := recs[0]
	if err := sameInfo(rec.InstanceInfo, info); err != nil {
		t.Fatalf("the record does not round-trip: %v", err)
	}
	if !rec.Live() || rec.State != anarchon.InstanceLive {
		t.Fatalf("state %q just after registering with a TTL of %v, want live", rec.State, longLease)
	}
	s.checkSeen(rec, before, after, longLease)

	// An instance with no jobs, and zero values, round-trips too.
	bare := anarchon.InstanceInfo{ID: "bare-" + randHex(4), JobsFingerprint: anarchon.FingerprintJobSet(nil)}
	s.register(1, bare, longLease)
	rec = mustFind(t, s.instances(0), bare.ID)
	if err := sameInfo(rec.InstanceInfo, bare); err != nil {
		t.Fatalf("a bare record does not round-trip: %v", err)
	}
}

// testRegistryRenew: registering again renews the record (LastSeen and
// ExpiresAt move with the store's clock) and replaces its contents.
func testRegistryRenew(t *testing.T, h Harness) {
	s := open(t, h, 2)
	info := sampleInfo("renew-" + randHex(4))
	b1, a1 := s.timedRegister(0, info, longLease)
	first := mustFind(t, s.instances(1), info.ID)
	s.checkSeen(first, b1, a1, longLease)

	h.Sleep(50 * time.Millisecond) // the store's clock must move for LastSeen to
	info.ClockOffset = 987654321 * time.Nanosecond
	info.Jobs = info.Jobs[:1]
	info.JobsFingerprint = anarchon.FingerprintJobSet(info.Jobs)
	info.JobCount = 1
	const ttl2 = 2 * longLease
	b2, a2 := s.timedRegister(1, info, ttl2)
	second := mustFind(t, s.instances(0), info.ID)
	if err := sameInfo(second.InstanceInfo, info); err != nil {
		t.Fatalf("a renewal did not replace the record: %v", err)
	}
	s.checkSeen(second, b2, a2, ttl2)
	if !second.LastSeen.After(first.LastSeen) {
		t.Fatalf("LastSeen did not move on renewal: %v then %v", first.LastSeen, second.LastSeen)
	}
	if !second.Live() {
		t.Fatalf("state %q after renewal, want live", second.State)
	}
}

// testRegistryExpiry: of two instances, the one that stops renewing is
// listed dead once its TTL has passed by the store's clock, and not
// before; the other, renewing, stays live; the dead one registering again
// is live again.
func testRegistryExpiry(t *testing.T, h Harness) {
	s := open(t, h, 3)
	gone := sampleInfo("gone-" + randHex(4))
	kept := sampleInfo("kept-" + randHex(4))
	kept.Jobs = nil
	kept.JobsFingerprint = anarchon.FingerprintJobSet(nil)
	b0, a0 := s.timedRegister(0, gone, registryTTL)
	start := time.Now()
	var dead anarchon.InstanceRecord
	for polls := 0; ; polls++ {
		kb, ka := s.timedRegister(1, kept, registryTTL)
		recs, before, after := s.timedList(2)
		g, k := mustFind(t, recs, gone.ID), mustFind(t, recs, kept.ID)
		if polls == 0 {
			s.checkSeen(g, b0, a0, registryTTL)
		}
		s.checkJudged(g, before, after)
		s.checkJudged(k, before, after)
		s.checkSeen(k, kb, ka, registryTTL)
		if g.State == anarchon.InstanceStopped {
			t.Fatalf("%q listed stopped, but it was never deregistered", g.ID)
		}
		if k.State != anarchon.InstanceLive && after.Sub(kb) < registryTTL {
			t.Fatalf("%q, renewed at store time %v, listed %s before its TTL passed", k.ID, kb, k.State)
		}
		if g.State == anarchon.InstanceDead {
			dead = g
			break
		}
		if time.Since(start) > registryTTL+registryWait || (h.FakeClock && polls > 10000) {
			t.Fatalf("%q still listed %s %v after its last renewal (TTL %v); store time now %v, ExpiresAt %v",
				g.ID, g.State, time.Since(start), registryTTL, after, g.ExpiresAt)
		}
		h.Sleep(registryTTL / 100) // a fine step, to catch a record listed dead early
	}
	if err := sameInfo(dead.InstanceInfo, gone); err != nil {
		t.Fatalf("the dead record lost its contents: %v", err)
	}
	if dead.Live() {
		t.Fatal("a dead record reports Live")
	}

	b, a := s.timedRegister(2, gone, longLease)
	again := mustFind(t, s.instances(0), gone.ID)
	if again.State != anarchon.InstanceLive {
		t.Fatalf("%q registered again after it was listed dead: state %q, want live", gone.ID, again.State)
	}
	s.checkSeen(again, b, a, longLease)
}

// testRegistryDeregister: a deregistered record is listed stopped (not
// dead, not live) with ExpiresAt no later than the deregistration; an
// unknown ID deregisters without error; registering again makes it live.
func testRegistryDeregister(t *testing.T, h Harness) {
	s := open(t, h, 2)
	info := sampleInfo("stop-" + randHex(4))
	other := sampleInfo("other-" + randHex(4))
	s.register(0, info, longLease)
	s.register(0, other, longLease)
	first := mustFind(t, s.instances(1), info.ID)
	if err := s.reg(1).DeregisterInstance(s.ctx, info.ID); err != nil {
		t.Fatalf("DeregisterInstance(%q): %v", info.ID, err)
	}
	after := s.now()
	recs := s.instances(0)
	rec := mustFind(t, recs, info.ID)
	if rec.State != anarchon.InstanceStopped || rec.Live() {
		t.Fatalf("%q after DeregisterInstance: state %q, want stopped", info.ID, rec.State)
	}
	if err := sameInfo(rec.InstanceInfo, info); err != nil {
		t.Fatalf("the stopped record lost its contents: %v", err)
	}
	if hasAbility[anarchon.ServerClock](s.b(0)) && rec.ExpiresAt.After(after.Add(clockSlack)) {
		t.Errorf("stopped record's ExpiresAt %v is after the deregistration (store time %v)", rec.ExpiresAt, after)
	}
	if !rec.LastSeen.Equal(first.LastSeen) {
		t.Errorf("DeregisterInstance moved LastSeen from %v to %v", first.LastSeen, rec.LastSeen)
	}
	if o := mustFind(t, recs, other.ID); o.State != anarchon.InstanceLive {
		t.Fatalf("deregistering %q changed %q to %q", info.ID, other.ID, o.State)
	}
	if err := s.reg(0).DeregisterInstance(s.ctx, "never-registered-"+randHex(4)); err != nil {
		t.Fatalf("DeregisterInstance of an unknown ID: %v", err)
	}
	if err := s.reg(0).DeregisterInstance(s.ctx, info.ID); err != nil {
		t.Fatalf("DeregisterInstance repeated: %v", err)
	}
	if got := len(s.instances(1)); got != 2 {
		t.Fatalf("Instances lists %d records after deregistering, want 2", got)
	}
	s.register(1, info, longLease)
	if rec := mustFind(t, s.instances(0), info.ID); rec.State != anarchon.InstanceLive {
		t.Fatalf("%q registered again after stopping: state %q, want live", info.ID, rec.State)
	}
}

// testRegistryMany: instances registering at once from several handles
// are all listed, each once.
func testRegistryMany(t *testing.T, h Harness) {
	s := open(t, h, 3)
	const n = 12
	want := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		want[i] = fmt.Sprintf("many-%02d-%s", i, randHex(3))
		wg.Go(func() {
			info := sampleInfo(want[i])
			info.PID = i
			if err := s.reg(i).RegisterInstance(s.ctx, info, longLease); err != nil {
				errs <- fmt.Errorf("RegisterInstance(%q): %w", info.ID, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(want)
	recs := s.instances(0)
	if got := ids(recs); !slices.Equal(got, want) {
		t.Fatalf("Instances lists %q, want %q", got, want)
	}
	for _, r := range recs {
		if !r.Live() {
			t.Errorf("%q: state %q, want live", r.ID, r.State)
		}
	}
}

// testRegistryBadInput: an empty ID and a TTL below a millisecond are
// refused.
func testRegistryBadInput(t *testing.T, h Harness) {
	s := open(t, h, 1)
	r := s.reg(0)
	if err := r.RegisterInstance(s.ctx, anarchon.InstanceInfo{}, time.Minute); err == nil {
		t.Error("RegisterInstance with an empty ID succeeded")
	}
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
		if err := r.RegisterInstance(s.ctx, sampleInfo("bad-"+randHex(4)), ttl); err == nil {
			t.Errorf("RegisterInstance with TTL %v succeeded", ttl)
		}
	}
	if recs := s.instances(0); len(recs) != 0 {
		t.Errorf("refused registrations left records: %q", ids(recs))
	}
}

// testRegistryClosed: after Close every registry method fails with an
// error wrapping anarchon.ErrClosed.
func testRegistryClosed(t *testing.T, h Harness) {
	s := open(t, h, 1)
	r := s.reg(0)
	if err := s.b(0).Close(s.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.RegisterInstance(s.ctx, sampleInfo("closed"), time.Minute); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("RegisterInstance after Close = %v, want ErrClosed", err)
	}
	if err := r.DeregisterInstance(s.ctx, "closed"); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("DeregisterInstance after Close = %v, want ErrClosed", err)
	}
	if _, err := r.Instances(s.ctx); !errors.Is(err, anarchon.ErrClosed) {
		t.Errorf("Instances after Close = %v, want ErrClosed", err)
	}
}

// testRegistryRetention (fake clocks only): records expired for longer
// than anarchon.InstanceRetention are dropped, live ones kept.
func testRegistryRetention(t *testing.T, h Harness) {
	s := open(t, h, 1)
	dead := sampleInfo("dead-" + randHex(4))
	stopped := sampleInfo("stopped-" + randHex(4))
	s.register(0, dead, time.Second)
	s.register(0, stopped, time.Hour)
	if err := s.reg(0).DeregisterInstance(s.ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	h.Sleep(time.Hour)
	if got := ids(s.instances(0)); len(got) != 2 {
		t.Fatalf("after an hour Instances lists %q, want both records kept", got)
	}
	live := sampleInfo("live-" + randHex(4))
	h.Sleep(anarchon.InstanceRetention)
	s.register(0, live, time.Minute)
	if got := ids(s.instances(0)); !slices.Equal(got, []string{live.ID}) {
		t.Fatalf("Instances lists %q a day after the others expired, want only %q", got, live.ID)
	}
}
