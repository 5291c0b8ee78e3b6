package anarchon

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InstanceRegistry is an optional Backend interface: a list of the
// schedulers sharing the store, each renewed on a heartbeat with a TTL
// judged by the store's clock (SPEC §10). A scheduler on a backend that has
// it registers itself at Start, renews its record every RegistryTTL/3 and
// marks it stopped at Stop, so that an operator sees which instances are
// live, which stopped cleanly and which died, and whether their job sets
// agree. Without it the scheduler keeps no registry and
// [Scheduler.Instances] returns [ErrNoRegistry].
type InstanceRegistry interface {
	// RegisterInstance creates or replaces the record of info.ID (an
	// upsert) and renews it: LastSeen becomes the store's now and
	// ExpiresAt the store's now plus ttl. A stopped or dead record becomes
	// live again. It fails on an empty info.ID or a ttl below one
	// millisecond, and after Close with an error wrapping ErrClosed.
	RegisterInstance(ctx context.Context, info InstanceInfo, ttl time.Duration) error
	// DeregisterInstance marks the record of id stopped, as of the store's
	// now (ExpiresAt becomes now unless it is already past), rather than
	// deleting it, so that a list tells a clean stop from a death. An
	// unknown id is not an error.
	DeregisterInstance(ctx context.Context, id string) error
	// Instances lists every record the store keeps, sorted by ID, each
	// with its State judged by the store's clock at the time of the call:
	// live until ExpiresAt, dead after it, stopped once deregistered.
	// Records whose ExpiresAt is more than InstanceRetention in the past
	// may be dropped, here or at any later time.
	Instances(ctx context.Context) ([]InstanceRecord, error)
}

// InstanceRetention is how long after its ExpiresAt a store keeps the
// record of a dead or stopped instance before it may drop it (SPEC §10). A
// store whose keys age out sooner (a NATS bucket with a shorter TTL) says
// so in its documentation.
const InstanceRetention = 24 * time.Hour

// DefaultRegistryTTL is the TTL of an instance's record when
// Options.RegistryTTL is zero: an instance that stops renewing is listed
// dead at most this long after its last renewal.
const DefaultRegistryTTL = 15 * time.Second

// ErrNoRegistry is returned by [Scheduler.Instances] when the backend does
// not implement [InstanceRegistry].
var ErrNoRegistry = errors.New("anarchon: backend has no instance registry")

// InstanceInfo is what a scheduler publishes about itself in the instance
// registry. Backends store it as it is given and return it unchanged
// (durations to the nanosecond, times to the nanosecond in UTC); new fields
// may be added (SPEC §9), so a backend should store the JSON encoding of
// the whole value rather than chosen fields.
type InstanceInfo struct {
	// ID is the instance ID (Options.InstanceID); the record's key.
	ID string `json:"id"`
	// Version is the anarchon module version the instance runs, from its
	// build information ("(devel)" for a development build, "" if unknown).
	Version string `json:"version,omitempty"`
	// Host is the machine's host name; PID its process ID.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// StartedAt is when the scheduler started, by its estimate of the
	// store's clock, in UTC.
	StartedAt time.Time `json:"started_at"`
	// ClockOffset is the instance's latest measured offset to the store's
	// clock (store minus local, see [Scheduler.ClockOffset]); 0 when the
	// backend has no ServerClock.
	ClockOffset time.Duration `json:"clock_offset_ns"`
	// TZDataVersion is the version of the time zone database the instance
	// computes cron slots with, e.g. "2025b"; "" if unknown.
	TZDataVersion string `json:"tzdata,omitempty"`
	// JobsFingerprint is [FingerprintJobSet] of Jobs: instances whose job
	// sets agree have equal fingerprints.
	JobsFingerprint string `json:"jobs_fingerprint"`
	// Jobs lists the instance's jobs with their fingerprints, sorted by
	// name, so that differing jobs can be named ([CompareJobSets]). The
	// scheduler publishes it at Start, then only while another live
	// instance runs a different job set (SPEC §10): at 10,000 jobs the list is about
	// 0.5 MB, which every instance would otherwise write, and read from
	// every other, at each renewal. [InstanceInfo.JobsListed] tells a
	// list left out from an empty job set.
	Jobs []JobFingerprint `json:"jobs,omitempty"`
	// JobCount is how many jobs the set has, published with or without
	// Jobs; see [InstanceInfo.NumJobs].
	JobCount int `json:"job_count,omitempty"`
}

// NumJobs is how many jobs the instance runs: JobCount, or the length of
// Jobs in a record written before JobCount existed.
func (info InstanceInfo) NumJobs() int { return max(info.JobCount, len(info.Jobs)) }

// emptyJobSet is FingerprintJobSet of no jobs.
var emptyJobSet = FingerprintJobSet(nil)

// JobsListed reports whether info carries its job list: true when Jobs
// is set or the job set is empty (or has no fingerprint, as a record
// written by a version before job sets had one). A record without its
// list names its job set by JobsFingerprint alone.
func (info InstanceInfo) JobsListed() bool {
	return len(info.Jobs) > 0 || info.JobsFingerprint == "" || info.JobsFingerprint == emptyJobSet
}

// JobFingerprint is one job of an instance's job set: its name and
// [FingerprintJob] of it.
type JobFingerprint struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fp"`
}

// InstanceState is the state of an instance's record, judged by the
// store's clock.
type InstanceState string

// Instance states.
const (
	InstanceLive    InstanceState = "live"    // renewed within its TTL
	InstanceDead    InstanceState = "dead"    // not renewed within its TTL, never deregistered
	InstanceStopped InstanceState = "stopped" // deregistered by a clean Stop
)

// InstanceRecord is an instance's record as [InstanceRegistry.Instances]
// lists it. New fields may be added (SPEC §9).
// Its JSON encoding, like InstanceInfo's, uses snake_case names, for
// status outputs.
type InstanceRecord struct {
	InstanceInfo
	// TTL is the ttl of the last registration.
	TTL time.Duration `json:"ttl_ns"`
	// LastSeen is the store's time of the last registration (renewal).
	LastSeen time.Time `json:"last_seen"`
	// ExpiresAt is LastSeen+TTL, or the store's time of the deregistration
	// if that came first (store clock).
	ExpiresAt time.Time `json:"expires_at"`
	// State is live, dead or stopped, as of the store's time of the list.
	State InstanceState `json:"state"`
}

// Live reports whether the record was live when it was listed.
func (r InstanceRecord) Live() bool { return r.State == InstanceLive }

// Gone reports whether a run this instance claimed at claimedAt (store
// clock) can no longer end from it, and why: the record is dead or
// stopped (the process died or lost the store), or it says the instance
// started more than a second after the claim (a later process with the
// same ID, which knows nothing of the run; the second allows for the
// instance's estimate of the store's clock, SPEC §10). The reason reads
// after the instance's ID ("'s registry record is dead since …"). A run
// whose instance is gone gets no result from it unless, only cut off,
// it reaches the store again; a manual run or a plain one has no backup
// (SPEC §12).
func (r InstanceRecord) Gone(claimedAt time.Time) (reason string, gone bool) {
	switch {
	case !r.Live():
		return fmt.Sprintf("'s registry record is %s since %s", r.State, r.ExpiresAt.UTC().Format(msLayout)), true
	case r.StartedAt.After(claimedAt.Add(restartMargin)):
		return fmt.Sprintf(" started again at %s", r.StartedAt.UTC().Format(msLayout)), true
	}
	return "", false
}

// fingerprintLen is the length of a fingerprint in hex digits (64 bits).
const fingerprintLen = 16

// FingerprintJob returns a stable fingerprint of a job, 16 hex digits,
// from what decides which slots run and how they are claimed: the name,
// the schedule (cron fields compared as written, runs of blanks folded),
// the zone, and after defaults the options Offset, MaxLate, NoLease (as the
// leased flag), Lease, Overlap (with OverlapLimit under OverlapLimit), MaxAttempts, CatchUp, Retry (when MaxRetries > 0) and Fingerprint.
// Jitter, Timeout and the history options are left out: instances that
// differ in them still run each slot once. Two instances whose jobs of one
// name have different fingerprints run them differently, for example a
// rolling update half done.
func FingerprintJob(j JobInfo) string {
	o := j.Options
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
		b.WriteByte(';')
	}
	dur := func(d time.Duration) { field(strconv.FormatInt(int64(d), 10)) }
	field("anarchon-job-v1")
	field(j.Name)
	field(strings.Join(strings.Fields(j.Schedule), " "))
	field(j.Zone)
	dur(o.Offset)
	dur(o.MaxLate)
	field(strconv.FormatBool(j.Leased))
	if j.Leased {
		dur(o.Lease)
		if o.Overlap == OverlapLimit {
			field(o.Overlap.String() + " " + strconv.Itoa(o.OverlapLimit))
		} else {
			field(o.Overlap.String())
		}
		field(strconv.Itoa(o.MaxAttempts))
		dur(o.CatchUp.Window)
		field(strconv.Itoa(o.CatchUp.Max))
		if r := o.Retry; r.MaxRetries > 0 {
			// Only when set, so that the fingerprints of jobs without
			// retries stay those of earlier versions.
			field("retry")
			field(strconv.Itoa(r.MaxRetries))
			dur(r.InitialBackoff)
			dur(r.MaxBackoff)
			field(strconv.FormatFloat(r.Multiplier, 'g', -1, 64))
			dur(r.Jitter)
		}
	}
	field(o.Fingerprint)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:fingerprintLen]
}

// FingerprintJobSet returns a stable fingerprint of a job set, 16 hex
// digits, from the names and fingerprints of its jobs in any order. An
// empty set has a fingerprint too.
func FingerprintJobSet(jobs []JobFingerprint) string {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b JobFingerprint) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	h.Write([]byte("anarchon-jobset-v1\n"))
	for _, j := range sorted {
		h.Write([]byte(strconv.Itoa(len(j.Name)) + ":" + j.Name + "=" + j.Fingerprint + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:fingerprintLen]
}

// JobSetDiff says how the job set of Instance differs from that of
// Reference. All three lists are sorted; a diff with all three empty and
// Unlisted false means the sets agree ([JobSetDiff.Empty]).
type JobSetDiff struct {
	Instance  string   // the instance compared
	Reference string   // the instance it is compared with
	Missing   []string // jobs Reference has and Instance lacks
	Extra     []string // jobs Instance has and Reference lacks
	Changed   []string // jobs both have, with different fingerprints
	// Unlisted: the two job sets differ (their fingerprints do), but a
	// record did not carry its job list yet, so the jobs cannot be named.
	// An instance publishes its list from its first renewal that sees the
	// difference, within RegistryTTL/3.
	Unlisted bool
}

// Jobs returns every job named by the diff, sorted: missing, extra or
// changed.
func (d JobSetDiff) Jobs() []string {
	out := slices.Concat(d.Missing, d.Extra, d.Changed)
	slices.Sort(out)
	return slices.Compact(out)
}

// Empty reports whether the two job sets agree.
func (d JobSetDiff) Empty() bool {
	return !d.Unlisted && len(d.Missing) == 0 && len(d.Extra) == 0 && len(d.Changed) == 0
}

// CompareJobSets compares the job set of inst with that of ref, job by job.
// Equal fingerprints are one job set (an empty diff). When they differ
// but either carries no job list ([InstanceInfo.JobsListed]), the diff is
// Unlisted and names no job.
func CompareJobSets(ref, inst InstanceInfo) JobSetDiff {
	d := JobSetDiff{Instance: inst.ID, Reference: ref.ID}
	switch {
	case ref.JobsFingerprint != "" && ref.JobsFingerprint == inst.JobsFingerprint:
		return d // one set, whether or not the lists are there
	case !ref.JobsListed() || !inst.JobsListed():
		d.Unlisted = true
		return d
	}
	theirs := make(map[string]string, len(inst.Jobs))
	for _, j := range inst.Jobs {
		theirs[j.Name] = j.Fingerprint
	}
	ours := make(map[string]bool, len(ref.Jobs))
	for _, j := range ref.Jobs {
		ours[j.Name] = true
		fp, ok := theirs[j.Name]
		switch {
		case !ok:
			d.Missing = append(d.Missing, j.Name)
		case fp != j.Fingerprint:
			d.Changed = append(d.Changed, j.Name)
		}
	}
	for _, j := range inst.Jobs {
		if !ours[j.Name] {
			d.Extra = append(d.Extra, j.Name)
		}
	}
	slices.Sort(d.Missing)
	slices.Sort(d.Extra)
	slices.Sort(d.Changed)
	d.Missing, d.Extra, d.Changed = slices.Compact(d.Missing), slices.Compact(d.Extra), slices.Compact(d.Changed)
	return d
}

// DiffJobSets compares the job sets of the live instances among records.
// The reference is the job set most live instances share (on a tie, the
// one of the instance that started first, then the smallest ID); one
// JobSetDiff is returned, sorted by Instance, for each live instance whose
// JobsFingerprint differs from the reference's; it is Unlisted, naming no
// job, while either record lacks its job list (InstanceInfo.Jobs). Dead
// and stopped records are ignored. nil means every live instance runs the
// same job set.
func DiffJobSets(records []InstanceRecord) []JobSetDiff {
	var live []InstanceRecord
	count := map[string]int{}
	for _, r := range records {
		if r.Live() {
			live = append(live, r)
			count[r.JobsFingerprint]++
		}
	}
	if len(count) < 2 {
		return nil
	}
	ref := slices.MinFunc(live, func(a, b InstanceRecord) int {
		return cmp.Or(
			cmp.Compare(count[b.JobsFingerprint], count[a.JobsFingerprint]),
			a.StartedAt.Compare(b.StartedAt),
			strings.Compare(a.ID, b.ID))
	})
	var out []JobSetDiff
	for _, r := range live {
		if r.JobsFingerprint != ref.JobsFingerprint {
			out = append(out, CompareJobSets(ref.InstanceInfo, r.InstanceInfo))
		}
	}
	slices.SortFunc(out, func(a, b JobSetDiff) int { return strings.Compare(a.Instance, b.Instance) })
	return out
}
