package anarchon

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// registryCallTimeout bounds one registry call of the scheduler.
const registryCallTimeout = 10 * time.Second

// minRegistryTTL keeps the renewal period (TTL/3) at a millisecond or more.
const minRegistryTTL = 3 * time.Millisecond

// registration is a started scheduler's entry in the instance registry:
// the loop that renews it and what it publishes.
type registration struct {
	reg    InstanceRegistry
	ttl    time.Duration
	info   InstanceInfo // ClockOffset is refreshed at each renewal
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has returned

	mismatch string // the last job-set mismatch reported; used by the loop only
	twin     bool   // another process was seen under this ID; used by the loop only
	// peers are the other live instances of the last listing, by ID; nil
	// before the first (notePeers). Used by the loop only.
	peers map[string]InstanceRecord
}

// registryTTL is Options.RegistryTTL with its default; 0 means disabled.
func (s *Scheduler) registryTTL() time.Duration {
	switch ttl := s.opts.RegistryTTL; {
	case ttl < 0:
		return 0
	case ttl == 0:
		return DefaultRegistryTTL
	default:
		return max(ttl, minRegistryTTL)
	}
}

// startRegistry registers the instance when the backend keeps a registry,
// and renews the record every TTL/3 until stopRegistry. It waits for the
// first registration (bounded by ctx); a failure is logged and reported as
// EventStoreError, never returned: the registry is for operators, and the
// renewals go on trying.
func (s *Scheduler) startRegistry(ctx context.Context) {
	reg, ok := As[InstanceRegistry](s.backend)
	ttl := s.registryTTL()
	if !ok || ttl == 0 {
		return
	}
	r := &registration{reg: reg, ttl: ttl, info: s.baseInstanceInfo(), done: make(chan struct{})}
	r.info.StartedAt = s.now().UTC()
	var lctx context.Context
	lctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Lock()
	if s.state != stateStarted || s.reg != nil {
		s.mu.Unlock()
		r.cancel()
		return
	}
	s.reg = r
	s.mu.Unlock()

	first := make(chan struct{})
	go s.registryLoop(lctx, r, first)
	select {
	case <-first:
	case <-ctx.Done():
	}
}

func (s *Scheduler) registryLoop(ctx context.Context, r *registration, first chan<- struct{}) {
	defer close(r.done)
	s.renewRegistration(ctx, r, true)
	close(first)
	t := time.NewTicker(r.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.renewRegistration(ctx, r, false)
		}
	}
}

// renewRegistration lists the registry, to check that no other process
// writes under this instance's ID and that the live instances run the
// same job set, then renews the record. Listing first lets the check see
// what others wrote since the last renewal; the first renewal does not
// check for a twin (the record may be a previous run's).
func (s *Scheduler) renewRegistration(ctx context.Context, r *registration, first bool) {
	ctx, cancel := context.WithTimeout(ctx, registryCallTimeout)
	defer cancel()
	s.mu.Lock()
	info := r.info // a job added, removed or changed since Start replaces it
	s.mu.Unlock()
	info.ClockOffset = s.ClockOffset()
	recs, err := r.reg.Instances(ctx)
	if err != nil {
		s.storeError(ctx, "Instances", "", time.Time{}, err)
	} else {
		s.setPeers(recs)
		s.notePeers(ctx, r, recs)
	}
	switch {
	case err == nil && first:
		s.checkLiveRecord(ctx, info, recs)
	case err == nil:
		s.checkTwin(ctx, r, info, recs)
	}
	published := info
	if err == nil && !first && !othersDiffer(info, recs) {
		// Every other live instance runs this job set: the fingerprint
		// says so, and the list, most of the record, is left out until
		// a difference needs naming (InstanceInfo.Jobs). The record made
		// at Start has it, so that a list taken right after every
		// instance started names the differences.
		published.Jobs = nil
	}
	if err := r.reg.RegisterInstance(ctx, published, r.ttl); err != nil {
		s.storeError(ctx, "RegisterInstance", "", time.Time{}, err)
		if published.Jobs != nil {
			// The list may be what the store refused (NATS's 1 MB
			// message limit is about 20,000 jobs): the record without
			// it keeps the instance listed live.
			published.Jobs = nil
			if err := r.reg.RegisterInstance(ctx, published, r.ttl); err != nil {
				s.storeError(ctx, "RegisterInstance", "", time.Time{}, err)
			}
		}
	}
	if recs != nil {
		s.checkJobSets(ctx, r, info, recs)
	}
}

// othersDiffer reports whether a live instance other than self runs
// another job set.
func othersDiffer(self InstanceInfo, recs []InstanceRecord) bool {
	for _, rec := range recs {
		if rec.ID != self.ID && rec.Live() && rec.JobsFingerprint != self.JobsFingerprint {
			return true
		}
	}
	return false
}

// otherProcess reports whether rec is under self's ID but was written by
// another process: another host, PID or start time.
func otherProcess(rec InstanceRecord, self InstanceInfo) bool {
	return rec.ID == self.ID && (rec.Host != self.Host || rec.PID != self.PID || !rec.StartedAt.Equal(self.StartedAt))
}

// checkLiveRecord warns at Start when a live record under this instance's
// ID was written by another process: a second process with this ID, or a
// previous run of this one that ended without deregistering (killed), whose
// record lives until its TTL runs out. The two cannot be told apart yet;
// checkTwin tells at the next renewals. This warning and checkTwin's
// say "instance ID", not the option's Go name: they reach the operators
// of programs that set it otherwise (the daemon's --instance), and a Go
// user reads Options.InstanceID in it all the same.
func (s *Scheduler) checkLiveRecord(ctx context.Context, self InstanceInfo, recs []InstanceRecord) {
	for _, rec := range recs {
		if rec.Live() && otherProcess(rec, self) {
			s.log.LogAttrs(ctx, slog.LevelWarn, "a live registry record has this instance ID: another process runs under it, or a previous run ended without deregistering (killed); give every instance an ID of its own",
				slog.String("other_host", rec.Host), slog.Int("other_pid", rec.PID), slog.Time("other_started_at", rec.StartedAt),
				slog.Time("expires_at", rec.ExpiresAt))
		}
	}
}

// checkTwin warns, once, when the record under this instance's ID was
// last written by another process (another host, PID or start time): two
// processes share an InstanceID, so their claims and history cannot be
// told apart.
func (s *Scheduler) checkTwin(ctx context.Context, r *registration, self InstanceInfo, recs []InstanceRecord) {
	if r.twin {
		return
	}
	for _, rec := range recs {
		if otherProcess(rec, self) {
			r.twin = true
			s.log.LogAttrs(ctx, slog.LevelWarn, "another process registers under this instance ID; give every instance an ID of its own",
				slog.String("other_host", rec.Host), slog.Int("other_pid", rec.PID), slog.Time("other_started_at", rec.StartedAt))
		}
	}
}

// checkJobSets compares this instance's job set with every other live
// instance's and reports a change of the differences: a WARN line per
// differing instance and one EventJobSetMismatch, or an INFO line and an
// event with no diffs when the sets agree again.
func (s *Scheduler) checkJobSets(ctx context.Context, r *registration, self InstanceInfo, recs []InstanceRecord) {
	var diffs []JobSetDiff
	var key strings.Builder
	for _, rec := range recs {
		if rec.ID == self.ID || !rec.Live() || rec.JobsFingerprint == self.JobsFingerprint {
			continue
		}
		d := CompareJobSets(self, rec.InstanceInfo)
		if d.Unlisted {
			// Its list comes with its next renewal, which sees this
			// instance differ: the differences are reported then, by
			// name, all together.
			return
		}
		diffs = append(diffs, d)
		key.WriteString(rec.ID + "\x00" + rec.JobsFingerprint + "\x00")
	}
	if len(diffs) > 0 {
		// A change of this instance's own set changes the differences
		// too (but when all agree, there is nothing new to say).
		key.WriteString(self.JobsFingerprint)
	}
	if key.String() == r.mismatch {
		return
	}
	r.mismatch = key.String()
	if len(diffs) == 0 {
		s.log.LogAttrs(ctx, slog.LevelInfo, "every live instance runs the same job set",
			slog.String("jobs_fingerprint", self.JobsFingerprint))
	}
	for _, d := range diffs {
		s.log.LogAttrs(ctx, slog.LevelWarn, "another instance runs a different job set",
			slog.String("other", d.Instance), slog.Any("missing_there", d.Missing),
			slog.Any("only_there", d.Extra), slog.Any("changed", d.Changed))
	}
	s.emit(Event{Kind: EventJobSetMismatch, JobSetDiffs: diffs})
}

// stopRegistry ends the renewals and marks the record stopped. Called by
// Stop; ctx bounds nothing beyond registryCallTimeout: a stopped instance
// that cannot say so is listed dead after its TTL instead.
func (s *Scheduler) stopRegistry(ctx context.Context) {
	s.mu.Lock()
	r := s.reg
	s.reg = nil
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryCallTimeout)
	defer cancel()
	if r.twin && s.twinWroteLast(dctx, r) {
		return
	}
	if err := r.reg.DeregisterInstance(dctx, r.info.ID); err != nil {
		s.log.LogAttrs(dctx, slog.LevelWarn, "could not mark the instance stopped in the registry; it will be listed dead",
			slog.Any("error", err))
	}
}

// twinWroteLast reports, for an instance that has seen another process
// register under its ID (checkTwin), whether that process wrote the
// record last and still keeps it live: marking it stopped would list a
// running instance as stopped until its next renewal, so the record is
// left to it (and listed dead after its TTL if that process is gone too).
// A listing that fails answers false: the record is marked stopped, as
// without a twin.
func (s *Scheduler) twinWroteLast(ctx context.Context, r *registration) bool {
	recs, err := r.reg.Instances(ctx)
	if err != nil {
		return false
	}
	for _, rec := range recs {
		if rec.Live() && otherProcess(rec, r.info) {
			s.log.LogAttrs(ctx, slog.LevelInfo, "not marking the registry record stopped: another process under this instance ID wrote it last and keeps it live",
				slog.String("other_host", rec.Host), slog.Int("other_pid", rec.PID), slog.Time("other_started_at", rec.StartedAt))
			return true
		}
	}
	return false
}

// refreshRegistration publishes the current job set at the next renewal,
// after a job was added, removed or changed while the scheduler runs.
func (s *Scheduler) refreshRegistration() {
	s.mu.Lock()
	registered := s.reg != nil
	s.mu.Unlock()
	if !registered {
		return // no registry: nothing to publish, and no fingerprints to compute
	}
	base := s.baseInstanceInfo()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.reg; r != nil {
		base.StartedAt = r.info.StartedAt
		r.info = base
	}
}

// baseInstanceInfo is what the scheduler publishes, without StartedAt and
// ClockOffset.
func (s *Scheduler) baseInstanceInfo() InstanceInfo {
	host, _ := os.Hostname()
	info := InstanceInfo{
		ID:      s.opts.InstanceID,
		Version: moduleVersion(),
		Host:    host,
		PID:     os.Getpid(),
	}
	// The zone database decides cron slots, so replicas that load different
	// releases are told apart by the fingerprint's neighbour here.
	info.TZDataVersion = TZDataVersion()
	if s.opts.HostZoneinfo {
		info.TZDataVersion = "host"
	}
	for _, j := range s.Jobs() {
		info.Jobs = append(info.Jobs, JobFingerprint{Name: j.Name, Fingerprint: FingerprintJob(j)})
	}
	slices.SortFunc(info.Jobs, func(a, b JobFingerprint) int { return strings.Compare(a.Name, b.Name) })
	info.JobsFingerprint = FingerprintJobSet(info.Jobs)
	info.JobCount = len(info.Jobs)
	return info
}

// InstanceInfo returns what the scheduler publishes about itself in the
// instance registry (SPEC §10): its ID, version, host, PID, job set and
// fingerprints, the latest clock offset, and StartedAt once started. It
// works on any backend, with or without a registry.
func (s *Scheduler) InstanceInfo() InstanceInfo {
	s.mu.Lock()
	r := s.reg
	s.mu.Unlock()
	info := s.baseInstanceInfo()
	if r != nil {
		info.StartedAt = r.info.StartedAt
	}
	info.ClockOffset = s.ClockOffset()
	return info
}

// Instances lists the instances in the backend's registry, live, dead and
// stopped, sorted by ID (SPEC §10). It initialises the backend if the
// scheduler was not started, so a command-line tool can list a cluster
// without starting. It returns ErrNoRegistry when the backend has no
// [InstanceRegistry], and the backend's errors unchanged.
func (s *Scheduler) Instances(ctx context.Context) ([]InstanceRecord, error) {
	if s.backend == nil {
		return nil, ErrNoBackend
	}
	reg, ok := As[InstanceRegistry](s.backend)
	if !ok {
		return nil, ErrNoRegistry
	}
	if err := s.ensureInit(ctx); err != nil {
		return nil, err
	}
	return reg.Instances(ctx)
}

// moduleVersion is the version of the anarchon module in the running
// binary's build information.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	const path = "github.com/anarchon/anarchon"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}
