package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anarchon/anarchon"
)

// fingerprintMaterial is what defines a job beyond what the library's
// FingerprintJob already covers (name, schedule, zone, claim options): the
// command (argv, or the shell and its line), its standard input (crontab
// "%" lines), environment, working directory, the user it runs as and its
// timeout. It becomes JobOptions.Fingerprint, so two replicas whose lines
// differ only in the command are told apart in the instance registry.
func fingerprintMaterial(j *jobSpec) string {
	var b strings.Builder
	field := func(k, v string) {
		// Length-prefixed, so that no value can spill into the next.
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
		b.WriteByte(';')
	}
	field("daemon", "v1")
	field("argc", strconv.Itoa(len(j.Argv)))
	for _, a := range j.Argv {
		field("arg", a)
	}
	field("stdin", j.Stdin)
	// The order of env lines matters (a later KEY= wins), so it is kept.
	field("envc", strconv.Itoa(len(j.Env)))
	for _, e := range j.Env {
		field("env", e)
	}
	field("dir", j.Workdir)
	field("user", j.User)
	field("timeout", strconv.FormatInt(int64(j.Options.Timeout), 10))
	return b.String()
}

// replicaJSON is one instance of the store's registry as "status --json"
// and /status show it.
type replicaJSON struct {
	ID              string       `json:"id"`
	Host            string       `json:"host,omitempty"`
	PID             int          `json:"pid,omitempty"`
	Version         string       `json:"version,omitempty"`
	State           string       `json:"state"` // live, dead or stopped, by the store's clock
	StartedAt       string       `json:"started_at,omitempty"`
	LastSeen        string       `json:"last_seen"`
	ExpiresAt       string       `json:"expires_at"`
	TTLSeconds      float64      `json:"ttl_seconds"`
	ClockOffset     float64      `json:"clock_offset_seconds"` // the store's clock minus the instance's
	TZData          string       `json:"tzdata,omitempty"`
	JobsFingerprint string       `json:"jobs_fingerprint"`
	Jobs            int          `json:"jobs"`
	JobSetDiff      *jobDiffJSON `json:"job_set_diff,omitempty"` // live replicas whose job set differs from the reference's
}

// jobDiffJSON is how a replica's job set differs from the reference's (the
// job set most live replicas run).
type jobDiffJSON struct {
	Reference string   `json:"reference"`
	Missing   []string `json:"missing"` // the reference has them, this replica does not
	Extra     []string `json:"extra"`   // this replica has them, the reference does not
	Changed   []string `json:"changed"` // both have them, defined differently
	Jobs      []string `json:"jobs"`    // all of the above, sorted
	// Unlisted: the sets differ (their fingerprints do) but a record does
	// not carry its job list yet, so no job is named; the instances
	// publish their lists within one renewal (anarchon.JobSetDiff).
	Unlisted bool `json:"unlisted,omitempty"`
}

// replicaReport is the registry part of a status report.
type replicaReport struct {
	Replicas []replicaJSON
	// Differing names every job that differs between live replicas.
	Differing []string
	// Mismatched is how many live replicas run another job set than the
	// reference.
	Mismatched int
	records    map[string]anarchon.InstanceRecord // by ID
}

// readReplicas lists the registry of store b, which the caller has
// initialised (a started scheduler, or openForRead), and compares the
// live replicas' job sets. It returns anarchon.ErrNoRegistry for a store
// without a registry.
func readReplicas(ctx context.Context, b anarchon.Backend) (replicaReport, error) {
	reg, ok := anarchon.As[anarchon.InstanceRegistry](b)
	if !ok {
		return replicaReport{}, anarchon.ErrNoRegistry
	}
	recs, err := reg.Instances(ctx)
	if err != nil {
		return replicaReport{}, err
	}
	return replicasOf(recs), nil
}

// replicasOf turns registry records into a report.
func replicasOf(recs []anarchon.InstanceRecord) replicaReport {
	rep := replicaReport{Replicas: []replicaJSON{}, Differing: []string{}, records: map[string]anarchon.InstanceRecord{}}
	diffs := map[string]anarchon.JobSetDiff{}
	for _, d := range anarchon.DiffJobSets(recs) {
		diffs[d.Instance] = d
		rep.Differing = append(rep.Differing, d.Jobs()...)
	}
	rep.Mismatched = len(diffs)
	slices.Sort(rep.Differing)
	rep.Differing = slices.Compact(rep.Differing)
	for _, r := range recs {
		rep.records[r.ID] = r
		rj := replicaJSON{
			ID: r.ID, Host: r.Host, PID: r.PID, Version: r.Version, State: string(r.State),
			StartedAt: formatTime(r.StartedAt), LastSeen: formatTime(r.LastSeen), ExpiresAt: formatTime(r.ExpiresAt),
			TTLSeconds: r.TTL.Seconds(), ClockOffset: r.ClockOffset.Seconds(), TZData: r.TZDataVersion,
			JobsFingerprint: r.JobsFingerprint, Jobs: r.NumJobs(),
		}
		if d, ok := diffs[r.ID]; ok {
			rj.JobSetDiff = &jobDiffJSON{Reference: d.Reference, Missing: orEmpty(d.Missing), Extra: orEmpty(d.Extra),
				Changed: orEmpty(d.Changed), Jobs: orEmpty(d.Jobs()), Unlisted: d.Unlisted}
		}
		rep.Replicas = append(rep.Replicas, rj)
	}
	return rep
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// holderState is what the registry says of a lease holder: "" when the
// registry is unknown or does not list it.
func (r replicaReport) holderState(id string) string {
	return string(r.records[id].State)
}

// runGone says why the running record r will get no result from its
// instance, gone by the registry (anarchon.InstanceRecord.Gone); "" when
// r is not running, or the registry is unknown, does not list its
// instance or lists it as able to end it. A plain or manual run has no
// backup, so such a record stays running; a leased slot's backup runs a
// new attempt.
func (r replicaReport) runGone(rec anarchon.RunRecord) string {
	in, ok := r.records[rec.InstanceID]
	if rec.Status != anarchon.StatusRunning || !ok {
		return ""
	}
	why, gone := in.Gone(rec.ClaimedAt)
	switch {
	case !gone:
		return ""
	case in.Live(): // a later process under the ID
		return in.ID + why + ": the process that ran it is gone, and nothing records this attempt's end"
	}
	return in.ID + why + ": it died or lost the store, and unless it reaches the store again nothing records this attempt's end"
}

// addReplicas reads the registry into rep; a store without a registry
// leaves the replicas out, any other failure is reported in the report.
func addReplicas(ctx context.Context, b anarchon.Backend, rep *statusReport) replicaReport {
	rr, err := readReplicas(ctx, b)
	switch {
	case errors.Is(err, anarchon.ErrNoRegistry):
		rep.ReplicasError = "the store keeps no instance registry"
	case err != nil:
		rep.ReplicasError = err.Error()
	default:
		rep.Replicas = rr.Replicas
		rep.DifferingJobs = rr.Differing
	}
	return rr
}

// printReplicas writes the replicas part of "status".
func printReplicas(w io.Writer, rep statusReport) {
	if rep.ReplicasError != "" {
		fmt.Fprintf(w, "replicas: unknown (%s)\n", rep.ReplicasError)
		return
	}
	count := map[string]int{}
	for _, r := range rep.Replicas {
		count[r.State]++
	}
	fmt.Fprintf(w, "replicas: %d live, %d dead, %d stopped\n", count["live"], count["dead"], count["stopped"])
	if len(rep.Replicas) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSTATE\tHOST\tPID\tVERSION\tLAST SEEN\tEXPIRES\tCLOCK OFFSET\tTZDATA\tJOBS\tFINGERPRINT")
		for _, r := range rep.Replicas {
			off := time.Duration(r.ClockOffset * float64(time.Second)).Round(time.Millisecond)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.State, dash(r.Host), r.PID,
				dash(r.Version), dash(r.LastSeen), dash(r.ExpiresAt), off, dash(r.TZData), r.Jobs, r.JobsFingerprint)
		}
		_ = tw.Flush()
	}
	for _, r := range rep.Replicas {
		d := r.JobSetDiff
		if d == nil {
			continue
		}
		var parts []string
		if len(d.Changed) > 0 {
			parts = append(parts, "defined differently: "+strings.Join(d.Changed, ", "))
		}
		if len(d.Extra) > 0 {
			parts = append(parts, "only on "+r.ID+": "+strings.Join(d.Extra, ", "))
		}
		if len(d.Missing) > 0 {
			parts = append(parts, "missing on "+r.ID+": "+strings.Join(d.Missing, ", "))
		}
		if d.Unlisted {
			parts = append(parts, "its jobs are named once the job lists are published (within one renewal)")
		}
		fmt.Fprintf(w, "  WARNING: %s runs another job set than %s: %s\n", r.ID, d.Reference, strings.Join(parts, "; "))
	}
	if len(rep.DifferingJobs) > 0 {
		fmt.Fprintf(w, "  jobs that differ between live replicas: %s\n", strings.Join(rep.DifferingJobs, ", "))
	}
}
