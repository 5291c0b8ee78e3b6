package faults

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
)

// FaultKind names a kind of injected fault.
type FaultKind string

// Fault kinds the harness injects.
const (
	FaultKill         FaultKind = "kill"          // SIGKILL of one instance process
	FaultKillWinner   FaultKind = "kill_winner"   // SIGKILL of the instance in the middle of a leased run
	FaultStoreRestart FaultKind = "store_restart" // the store server stopped and started again on the same port
	FaultDelay        FaultKind = "delay"         // proxies delay every chunk of bytes
	FaultCut          FaultKind = "cut"           // proxies reset connections and refuse new ones
	FaultBlackhole    FaultKind = "blackhole"     // proxies stall: nothing goes through, nothing is refused
	FaultStoreLock    FaultKind = "store_lock"    // another process holds the store's write lock (SQLite)
	FaultClockStep    FaultKind = "clock_step"    // one instance's clock steps by ±30 s or ±1 h, and back when lifted
	FaultNodeKill     FaultKind = "node_kill"     // SIGKILL of one server of a replicated store (a leader); End: when it was started again
	FaultNodeStop     FaultKind = "node_stop"     // SIGSTOP of one server of a replicated store, SIGCONT when lifted
)

// node reports whether the fault hits one server of a replicated store:
// the store stays reachable through the others, so runs may go on, but
// claims fail until the cluster has moved on (a new leader, a client's
// reconnection).
func (k FaultKind) node() bool { return k == FaultNodeKill || k == FaultNodeStop }

// outage reports whether the fault makes the store unreachable for the
// instances it targets.
func (k FaultKind) outage() bool {
	switch k {
	case FaultStoreRestart, FaultCut, FaultBlackhole, FaultStoreLock:
		return true
	}
	return false
}

// Fault is one injected fault, as the harness records it.
type Fault struct {
	Kind FaultKind
	// Targets are the instance IDs the fault hits: the killed process, or
	// the instances behind the proxies. Empty means every instance (a
	// store-wide fault).
	Targets []string
	Start   time.Time // when the fault began (the kill was sent)
	End     time.Time // when it was lifted; zero for kills
}

func (f Fault) hits(inst string) bool {
	return len(f.Targets) == 0 || slices.Contains(f.Targets, inst)
}

// Spec says what the checker expects of a run of the harness.
type Spec struct {
	LeasedJob      string        // the job run under leases
	PlainJob       string        // the job run with plain claims
	LeasedInterval time.Duration // interval of LeasedJob
	PlainInterval  time.Duration // interval of PlainJob
	Lease          time.Duration // lease of LeasedJob
	Work           time.Duration // how long a LeasedJob run works
	// From and To bound the slots of LeasedJob that must be settled:
	// every instance was started by From, and To leaves time for the last
	// slots to finish before the instances were stopped.
	From, To time.Time
	// Tolerance is how early (host clock) a run may start before its slot
	// and still count as on time: the error of the offset estimate.
	// Defaults to 10 ms.
	Tolerance time.Duration
	// Grace is how long after an outage began a run may still start: a
	// claim answered just before the cut. Defaults to 100 ms.
	Grace time.Duration
	// RecoveryBound is how soon after a store-wide outage ends a run must
	// start again. Defaults to 20 s.
	RecoveryBound time.Duration
	// Reconnect is how long after a store-wide outage a slot may still go
	// unsettled: clients reconnecting. Slots due from one leased interval
	// before an outage to Reconnect after it are excused from the
	// settlement check (their claims fail, and a failed claim is not
	// retried: fail closed). Defaults to 2 s.
	Reconnect time.Duration
	// MaxLate is the jobs' MaxLate: a first attempt (or a plain run) that
	// starts more than MaxLate + Tolerance + Spawn after its slot is a
	// late start. 0: not checked.
	MaxLate time.Duration
	// Spawn is how long after the scheduler starts a handler the ledger's
	// start may be stamped: zero for a handler in the instance's process;
	// for the daemon's shell jobs the fork and exec of the shell and of
	// date(1), which the scheduler's lateness check cannot see. Only the
	// late-start check allows it; the early-start check does not.
	Spawn time.Duration
	// ClockSync is the instances' Options.ClockSyncInterval. A clock_step
	// fault's instance must measure its offset right again (within
	// StepSettle) within ClockSync of each step (the step and the step
	// back); zero skips that check, and a violation says so.
	ClockSync time.Duration
	// StepSettle is how far the stepped instance's estimate of the store's
	// clock may be from the true one and count as measured right again
	// (the steps are 30 s and 1 h). Defaults to 100 ms.
	StepSettle time.Duration
	// Fence says the store gives fencing tokens (anarchon.Run.Fence): a
	// start of LeasedJob without one is a violation. The order of the
	// fences that runs carry is checked either way ([CheckFences]).
	Fence bool
}

// Report is what the checker found. Violations lists every broken
// invariant; a run passes when it is empty.
type Report struct {
	Backend         string
	Instances       int // processes started, restarts included
	Runs            int // handler starts in the ledger
	LeasedSlots     int // slots of the leased job checked for settlement
	PlainSlots      int // distinct slots the plain job ran
	Faults          map[FaultKind]int
	Duplicates      int      // slots run to completion or settled more than once, unexplained by a fault
	Reruns          int      // slots run to completion twice because the first holder could not confirm (Finish) before a kill or an outage
	RerunSlots      []string // each rerun's slot, its runs and their history statuses (instList), for the drill's report
	Losses          int      // slots due with instances alive that were never settled
	Excused         int      // slots not checked for settlement: due during a store-wide outage
	Unrecorded      int      // slots completed in the ledger whose result is missing from history
	Overlaps        int      // a backup started before the previous attempt ended
	EarlyStarts     int      // runs that started before their slot
	Unclaimed       int      // runs that started while their instance could not reach the store
	Takeovers       int      // leased runs with attempt > 1
	Statuses        map[anarchon.Status]int
	MinLead         time.Duration // smallest start minus slot over all runs (negative: early)
	MaxOffsetError  time.Duration // largest |estimated store offset - true offset|
	LongestRecovery time.Duration // longest time from the end of a store-wide outage (or the start of a node fault) to the next run
	SameAttempt     int           // leased slots whose handler started twice with one attempt number (two holders both fenced alike)
	LateStarts      int           // first attempts and plain runs started more than Spec.MaxLate after their slot
	PlainLost       int           // plain slots in [From, To] that no instance ran (claims fail closed)
	FailoverLosses  int           // leased slots never settled, due during a node fault (counted, not violations)
	// Clock steps (clock_step faults; each fault is a step and a step
	// back): Steps checked, the longest time from a step to the stepped
	// instance's first offset measured right (within Spec.StepSettle),
	// and the longest from a step to its next run that started on time
	// (a figure only: another instance may win the slots in between).
	Steps           int
	SlowestStepSync time.Duration
	SlowestStepRun  time.Duration
	StepsWithoutRun int         // steps after which the stepped instance started no run before its next step, kill or the end
	StepsUnjudged   int         // steps not measured right again within a window shorter than Spec.ClockSync (the next step came first)
	Fences          FenceReport // the fencing tokens of the leased job's starts; its violations are in Violations too
	Violations      []string
}

// String formats the report as a few lines.
func (r Report) String() string {
	var b strings.Builder
	kinds := make([]string, 0, len(r.Faults))
	for k, n := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	st := make([]string, 0, len(r.Statuses))
	for k, n := range r.Statuses {
		st = append(st, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(st)
	fmt.Fprintf(&b, "backend %s: %d processes, %d runs, %d leased slots checked (%d excused by outages), %d plain slots\n",
		r.Backend, r.Instances, r.Runs, r.LeasedSlots, r.Excused, r.PlainSlots)
	fmt.Fprintf(&b, "  faults: %s\n", strings.Join(kinds, " "))
	fmt.Fprintf(&b, "  leased history: %s; takeovers %d\n", strings.Join(st, " "), r.Takeovers)
	fmt.Fprintf(&b, "  duplicates %d, losses %d, overlaps %d, early starts %d, unclaimed runs %d, unrecorded results %d, reruns after an unconfirmed finish %d\n",
		r.Duplicates, r.Losses, r.Overlaps, r.EarlyStarts, r.Unclaimed, r.Unrecorded, r.Reruns)
	fmt.Fprintf(&b, "  min start-slot lead %v, max clock offset error %v, longest recovery %v\n",
		r.MinLead, r.MaxOffsetError, r.LongestRecovery)
	fmt.Fprintf(&b, "  same-attempt starts %d, starts past MaxLate %d, plain slots lost %d, leased slots lost in node faults %d\n",
		r.SameAttempt, r.LateStarts, r.PlainLost, r.FailoverLosses)
	if f := r.Fences; f.Fenced > 0 || f.Unfenced > 0 && f.Required {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if r.Steps > 0 {
		fmt.Fprintf(&b, "  clock steps %d: offset measured right again within %v at worst (%d unjudged: stepped again first); next on-time run within %v at worst (%d steps without a run before the next)\n",
			r.Steps, r.SlowestStepSync, r.StepsUnjudged, r.SlowestStepRun, r.StepsWithoutRun)
	}
	for _, v := range r.RerunSlots {
		fmt.Fprintf(&b, "  rerun: %s\n", v)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  VIOLATION: %s\n", v)
	}
	return b.String()
}

// ledgerRun is one handler run, from its start and end lines.
type ledgerRun struct {
	inst, job, token string
	slot             int64 // Unix ms
	attempt          int
	start, end       int64 // host clock, Unix µs; end 0 when the process died first
	result, cause    string
	offErr           time.Duration
}

// Check reads a ledger, the store's history of the two jobs and the faults
// injected, and checks anarchon's invariants:
//
//   - plain claims: no slot runs twice (ledger), no slot has two records
//     (history);
//   - leases: no slot is run to completion twice, or settled twice in
//     history; every slot in [Spec.From, Spec.To] outside store-wide
//     outages is settled (success, error, missed, skipped or abandoned);
//   - fencing: a backup never starts before the previous attempt ended
//     (its end line, or the SIGKILL of its process);
//   - no run starts before its slot (host clock, which is the store's:
//     every store runs on this host);
//   - fail closed: no run starts on an instance while its store is
//     unreachable, and a run starts within Spec.RecoveryBound after a
//     store-wide outage ends;
//   - fencing tokens ([CheckFences] on the leased job): a later holder of
//     a slot carries a larger fence than the earlier ones, no two starts
//     carry the same one, and with Spec.Fence every start carries one.
//
// A nil history (the store could not be read) skips the checks that need
// it, and a violation says so.
func Check(spec Spec, entries []Entry, history map[string][]anarchon.RunRecord, faults []Fault) Report {
	if spec.Tolerance == 0 {
		spec.Tolerance = 10 * time.Millisecond
	}
	if spec.Grace == 0 {
		spec.Grace = 100 * time.Millisecond
	}
	if spec.RecoveryBound == 0 {
		spec.RecoveryBound = 20 * time.Second
	}
	if spec.Reconnect == 0 {
		spec.Reconnect = 2 * time.Second
	}
	if spec.StepSettle == 0 {
		spec.StepSettle = 100 * time.Millisecond
	}
	r := Report{Faults: map[FaultKind]int{}, Statuses: map[anarchon.Status]int{}, MinLead: time.Duration(1<<63 - 1)}
	bad := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	for _, f := range faults {
		r.Faults[f.Kind]++
	}

	// Runs from the ledger, by token.
	runs := map[string]*ledgerRun{}
	var order []*ledgerRun
	insts := map[string]bool{}
	for _, e := range entries {
		insts[e.Inst] = true
		switch e.Ev {
		case EvStart:
			lr := &ledgerRun{inst: e.Inst, job: e.Job, token: e.Token, slot: e.Slot, attempt: e.Attempt, start: e.T,
				offErr: time.Duration(e.OffsetMs)*time.Millisecond + time.Duration(e.Local-e.T)*time.Microsecond}
			if prev, dup := runs[e.Token]; dup {
				bad("token %s started twice (instances %s and %s)", e.Token, prev.inst, e.Inst)
				continue
			}
			runs[e.Token] = lr
			order = append(order, lr)
		case EvEnd:
			if lr, ok := runs[e.Token]; ok {
				lr.end, lr.result, lr.cause = e.T, e.Result, e.Cause
			} else {
				bad("end line for token %s without a start", e.Token)
			}
		}
	}
	r.Instances = len(insts)
	r.Runs = len(order)

	killedAt := map[string]int64{} // instance -> SIGKILL time, µs
	for _, f := range faults {
		if (f.Kind == FaultKill || f.Kind == FaultKillWinner) && len(f.Targets) == 1 {
			killedAt[f.Targets[0]] = f.Start.UnixMicro()
		}
	}

	// Every run: on time, and not while its store was unreachable.
	for _, lr := range order {
		lead := time.Duration(lr.start-lr.slot*1000) * time.Microsecond
		r.MinLead = min(r.MinLead, lead)
		if lead < -spec.Tolerance {
			r.EarlyStarts++
			bad("%s slot %s started %v before its slot on %s", lr.job, fmtMs(lr.slot), -lead, lr.inst)
		}
		r.MaxOffsetError = max(r.MaxOffsetError, absDur(lr.offErr))
		for _, f := range faults {
			if !f.Kind.outage() || f.End.IsZero() || !f.hits(lr.inst) {
				continue
			}
			from, to := f.Start.Add(spec.Grace).UnixMicro(), f.End.UnixMicro()
			if lr.start >= from && lr.start < to {
				r.Unclaimed++
				bad("%s slot %s started on %s at %s, during a %s fault (%s to %s): not fail-closed",
					lr.job, fmtMs(lr.slot), lr.inst, fmtUs(lr.start), f.Kind, f.Start.Format(tsFormat), f.End.Format(tsFormat))
			}
		}
		if lr.job == spec.LeasedJob && lr.attempt > 1 {
			r.Takeovers++
		}
		if spec.MaxLate > 0 && lr.attempt <= 1 && lead > spec.MaxLate+spec.Tolerance+spec.Spawn {
			r.LateStarts++
			bad("%s slot %s attempt %d started %v after its slot on %s, past MaxLate %v",
				lr.job, fmtMs(lr.slot), lr.attempt, lead, lr.inst, spec.MaxLate)
		}
	}
	if len(order) == 0 {
		r.MinLead = 0
		bad("the ledger holds no run at all")
	}
	if history == nil {
		bad("no history from the store: settlement, records and losses not checked")
	}

	bySlot := func(job string) map[int64][]*ledgerRun {
		m := map[int64][]*ledgerRun{}
		for _, lr := range order {
			if lr.job == job {
				m[lr.slot] = append(m[lr.slot], lr)
			}
		}
		return m
	}

	// Plain claims: one run per slot, one record per slot.
	plain := bySlot(spec.PlainJob)
	r.PlainSlots = len(plain)
	for slot, rs := range plain {
		if len(rs) > 1 {
			r.Duplicates++
			bad("%s slot %s ran %d times (%s)", spec.PlainJob, fmtMs(slot), len(rs), instList(rs))
		}
	}
	if piv := spec.PlainInterval.Milliseconds(); piv > 0 && spec.To.After(spec.From) {
		for s := (spec.From.UnixMilli() + piv - 1) / piv * piv; s <= spec.To.UnixMilli(); s += piv {
			if len(plain[s]) == 0 {
				r.PlainLost++
			}
		}
	}
	perSlot := map[int64]map[string]bool{}
	for _, rec := range history[spec.PlainJob] {
		s := rec.Slot.UnixMilli()
		if perSlot[s] == nil {
			perSlot[s] = map[string]bool{}
		}
		perSlot[s][rec.Token] = true
	}
	for s, toks := range perSlot {
		if len(toks) > 1 {
			r.Duplicates++
			bad("%s slot %s has %d history records", spec.PlainJob, fmtMs(s), len(toks))
		}
	}

	// Leases: completions, settlement, fencing.
	leased := bySlot(spec.LeasedJob)
	// Runs whose end the store did not accept: the scheduler records them
	// lease_lost (a backup already held the slot when the finish arrived)
	// or unconfirmed (the finish never got through).
	refused := map[string]bool{}
	recorded := map[string][]string{} // a token's history statuses
	for _, rec := range history[spec.LeasedJob] {
		if rec.Status == anarchon.StatusLeaseLost || rec.Status == anarchon.StatusUnconfirmed {
			refused[rec.Token] = true
		}
		recorded[rec.Token] = append(recorded[rec.Token], string(rec.Status))
	}
	for slot, rs := range leased {
		completed, unconfirmed := 0, 0
		for _, lr := range rs {
			if lr.result != ResultCompleted {
				continue
			}
			completed++
			if refused[lr.token] || unconfirmedFinish(lr, faults, killedAt) {
				unconfirmed++
			}
		}
		switch {
		case completed > 1 && completed-unconfirmed <= 1:
			// The holder completed, then died, lost the store, or was too
			// slow, before its Finish reached the store within its lease:
			// to the store it is a holder that died, and a backup runs the
			// slot again (at least once); history shows the first run as
			// lease_lost or unconfirmed. Run.Attempt is the fencing number
			// that lets the work tell the two apart.
			r.Reruns++
			var runs []string
			for _, lr := range rs {
				runs = append(runs, fmt.Sprintf("%s, history %v", instList([]*ledgerRun{lr}), recorded[lr.token]))
			}
			r.RerunSlots = append(r.RerunSlots, fmt.Sprintf("%s slot %s: %s", spec.LeasedJob, fmtMs(slot), strings.Join(runs, "; ")))
		case completed > 1:
			r.Duplicates++
			bad("%s slot %s completed %d times (%s)", spec.LeasedJob, fmtMs(slot), completed, instList(rs))
		}
		slices.SortFunc(rs, func(a, b *ledgerRun) int { return cmp.Compare(a.start, b.start) })
		seen := map[int]string{}
		for _, lr := range rs {
			if other, dup := seen[lr.attempt]; dup {
				r.SameAttempt++
				bad("%s slot %s: attempt %d started on %s and on %s: two holders with one fencing number",
					spec.LeasedJob, fmtMs(slot), lr.attempt, other, lr.inst)
			}
			seen[lr.attempt] = lr.inst
		}
		for i, a := range rs {
			end := a.end
			if end == 0 {
				if k, ok := killedAt[a.inst]; ok && k >= a.start {
					end = k
				}
			}
			for _, b := range rs[i+1:] {
				if end == 0 {
					r.Overlaps++
					bad("%s slot %s: attempt %d on %s started at %s while attempt %d on %s never ended",
						spec.LeasedJob, fmtMs(slot), b.attempt, b.inst, fmtUs(b.start), a.attempt, a.inst)
				} else if end > b.start {
					r.Overlaps++
					how := "killed"
					if a.end != 0 {
						how = a.result
						if a.cause != "" {
							how += ": " + a.cause
						}
					}
					bad("%s slot %s: attempt %d on %s started at %s, %v before attempt %d on %s ended (%s)",
						spec.LeasedJob, fmtMs(slot), b.attempt, b.inst, fmtUs(b.start),
						time.Duration(end-b.start)*time.Microsecond, a.attempt, a.inst, how)
				}
			}
		}
	}
	finals := map[int64]map[string]anarchon.Status{}
	for _, rec := range history[spec.LeasedJob] {
		r.Statuses[rec.Status]++
		if !rec.Status.Final() {
			continue
		}
		s := rec.Slot.UnixMilli()
		if finals[s] == nil {
			finals[s] = map[string]anarchon.Status{}
		}
		finals[s][rec.Token] = rec.Status
	}
	for s, toks := range finals {
		if len(toks) > 1 {
			r.Duplicates++
			bad("%s slot %s settled %d times in history: %v", spec.LeasedJob, fmtMs(s), len(toks), toks)
		}
	}
	iv := spec.LeasedInterval.Milliseconds()
	if iv > 0 && spec.To.After(spec.From) && history != nil {
		first := (spec.From.UnixMilli() + iv - 1) / iv * iv
	slots:
		for s := first; s <= spec.To.UnixMilli(); s += iv {
			st := time.UnixMilli(s)
			for _, f := range faults {
				if len(f.Targets) > 0 || !f.Kind.outage() || f.End.IsZero() {
					continue
				}
				lo := f.Start.Add(-spec.LeasedInterval)
				hi := f.End.Add(spec.Reconnect)
				if !st.Before(lo) && !st.After(hi) {
					r.Excused++
					continue slots
				}
			}
			r.LeasedSlots++
			if len(finals[s]) > 0 {
				continue
			}
			if inNodeFault(st, spec, faults) {
				// A claim failed while the cluster moved on: fail closed.
				r.FailoverLosses++
				continue
			}
			completedInLedger := false
			for _, lr := range leased[s] {
				completedInLedger = completedInLedger || lr.result == ResultCompleted
			}
			if completedInLedger {
				r.Unrecorded++
				bad("%s slot %s completed (ledger) but history has no final record", spec.LeasedJob, fmtMs(s))
				continue
			}
			r.Losses++
			bad("%s slot %s was never settled (runs: %s)", spec.LeasedJob, fmtMs(s), instList(leased[s]))
		}
	}

	// Recovery after store-wide outages.
	for _, f := range faults {
		if len(f.Targets) > 0 || !f.Kind.outage() || f.End.IsZero() {
			continue
		}
		end := f.End.UnixMicro()
		next := int64(0)
		for _, lr := range order {
			if lr.start >= end && lr.slot*1000 >= end && (next == 0 || lr.start < next) {
				next = lr.start
			}
		}
		if next == 0 {
			if spec.To.After(f.End.Add(spec.RecoveryBound)) {
				bad("no run started after the %s fault ended at %s", f.Kind, f.End.Format(tsFormat))
			}
			continue
		}
		rec := time.Duration(next-end) * time.Microsecond
		r.LongestRecovery = max(r.LongestRecovery, rec)
		if rec > spec.RecoveryBound {
			bad("the first run after the %s fault ended at %s started %v later (bound %v)", f.Kind, f.End.Format(tsFormat), rec, spec.RecoveryBound)
		}
	}
	// Recovery after node faults: from the fault's start to the first run
	// of a slot due after it.
	for _, f := range faults {
		if !f.Kind.node() {
			continue
		}
		start := f.Start.UnixMicro()
		next := int64(0)
		for _, lr := range order {
			if lr.slot*1000 >= start && (next == 0 || lr.start < next) {
				next = lr.start
			}
		}
		if next == 0 {
			if spec.To.After(f.Start.Add(spec.RecoveryBound)) {
				bad("no run started after the %s fault at %s", f.Kind, f.Start.Format(tsFormat))
			}
			continue
		}
		rec := time.Duration(next-start) * time.Microsecond
		r.LongestRecovery = max(r.LongestRecovery, rec)
		if rec > spec.RecoveryBound {
			bad("the first run after the %s fault at %s started %v later (bound %v)", f.Kind, f.Start.Format(tsFormat), rec, spec.RecoveryBound)
		}
	}
	checkSteps(spec, &r, entries, order, killedAt, bad)
	r.Fences = CheckFences(entries, spec.LeasedJob, spec.Fence)
	r.Violations = append(r.Violations, r.Fences.Violations...)
	slices.Sort(r.RerunSlots) // by slot: the lines begin alike up to it
	return r
}

// FenceReport is what [CheckFences] found of one job's fencing tokens.
type FenceReport struct {
	Job        string
	Required   bool     // every start had to carry a fence
	Fenced     int      // starts that carried a fence
	Unfenced   int      // starts with Fence 0 (a violation when Required)
	Takeovers  int      // later holders of a slot whose fence was compared with the earlier holders'
	Backward   int      // later holders of a slot whose fence was not above every earlier holder's
	Reused     int      // starts whose fence an earlier start of the job carried too
	Violations []string // one per Backward, Reused and (when Required) Unfenced start
}

// String formats the report as one line.
func (f FenceReport) String() string {
	return fmt.Sprintf("fences of %s: %d starts fenced, %d without a fence; %d later holders of a slot compared, %d not above an earlier holder's; %d fences carried twice",
		f.Job, f.Fenced, f.Unfenced, f.Takeovers, f.Backward, f.Reused)
}

// CheckFences checks the fencing tokens (SPEC §6, "Fencing") that the
// starts of job carry in the ledger: every later holder of a slot — a
// takeover, attempt n+1, or a second holder with the same attempt after
// a store forgot a claim — must carry a fence above every earlier
// holder's, and no two starts of the job may carry the same non-zero
// fence (each won claim takes a new one, and each start is a win of its
// own). Holders of a slot are ordered by attempt, then by start time.
// Starts without a fence (0) are left out of both checks, and with
// required each is a violation: the store gives fences, and a run
// started without one.
func CheckFences(entries []Entry, job string, required bool) FenceReport {
	f := FenceReport{Job: job, Required: required}
	bad := func(format string, args ...any) { f.Violations = append(f.Violations, fmt.Sprintf(format, args...)) }
	type start struct {
		inst    string
		attempt int
		t       int64
		fence   uint64
	}
	slots := map[int64][]start{}
	var slotOrder []int64
	byFence := map[uint64]Entry{}
	seen := map[string]bool{} // tokens: Check reports a token started twice
	for _, e := range entries {
		if e.Ev != EvStart || e.Job != job || seen[e.Token] {
			continue
		}
		seen[e.Token] = true
		if e.Fence == 0 {
			f.Unfenced++
			if required {
				bad("%s slot %s attempt %d started on %s without a fence", job, fmtMs(e.Slot), e.Attempt, e.Inst)
			}
			continue
		}
		f.Fenced++
		if prev, dup := byFence[e.Fence]; dup {
			f.Reused++
			bad("%s: fence %d carried by two starts: slot %s attempt %d on %s, and slot %s attempt %d on %s",
				job, e.Fence, fmtMs(prev.Slot), prev.Attempt, prev.Inst, fmtMs(e.Slot), e.Attempt, e.Inst)
		} else {
			byFence[e.Fence] = e
		}
		if _, ok := slots[e.Slot]; !ok {
			slotOrder = append(slotOrder, e.Slot)
		}
		slots[e.Slot] = append(slots[e.Slot], start{inst: e.Inst, attempt: e.Attempt, t: e.T, fence: e.Fence})
	}
	for _, slot := range slotOrder {
		rs := slots[slot]
		slices.SortStableFunc(rs, func(a, b start) int { return cmp.Or(cmp.Compare(a.attempt, b.attempt), cmp.Compare(a.t, b.t)) })
		top := 0 // the holder with the largest fence so far
		for i := 1; i < len(rs); i++ {
			f.Takeovers++
			if b, a := rs[i], rs[top]; b.fence <= a.fence {
				f.Backward++
				bad("%s slot %s: attempt %d on %s carries fence %d, not above fence %d of attempt %d on %s before it",
					job, fmtMs(slot), b.attempt, b.inst, b.fence, a.fence, a.attempt, a.inst)
			}
			if rs[i].fence > rs[top].fence {
				top = i
			}
		}
	}
	return f
}

// inNodeFault reports whether a slot was due while a node fault could
// make its claims fail: from one leased interval before the fault to
// RecoveryBound after it was lifted (a kill: after it began).
func inNodeFault(slot time.Time, spec Spec, faults []Fault) bool {
	for _, f := range faults {
		if !f.Kind.node() {
			continue
		}
		end := f.Start
		if f.Kind == FaultNodeStop && f.End.After(end) {
			end = f.End
		}
		if !slot.Before(f.Start.Add(-spec.LeasedInterval)) && !slot.After(end.Add(spec.RecoveryBound)) {
			return true
		}
	}
	return false
}

// checkSteps checks that an instance whose clock stepped is back to
// normal within one clock sync. Each step (the instance's EvStep line, at
// a clock_step fault's start and back at its end) opens a window that
// ends at the instance's next step, its kill or the end of the ledger;
// in it, the first later line of the instance (in file order, so written
// after the step) that was read under the new offset and whose estimate
// of the store's clock is within Spec.StepSettle of the truth must come
// within Spec.ClockSync. A window shorter than ClockSync without such a
// line is left unjudged. It also measures the time to the instance's next
// on-time run start.
func checkSteps(spec Spec, r *Report, entries []Entry, order []*ledgerRun, killedAt map[string]int64, bad func(string, ...any)) {
	var steps []int
	var last int64
	for i, e := range entries {
		last = max(last, e.T)
		if e.Ev == EvStep {
			steps = append(steps, i)
		}
	}
	if len(steps) == 0 {
		return
	}
	if spec.ClockSync <= 0 {
		bad("clock steps in the ledger but Spec.ClockSync is not set: recovery after the steps not checked")
		return
	}
	skew := func(e Entry) time.Duration { return time.Duration(e.Local-e.T) * time.Microsecond }
	for _, si := range steps {
		s := entries[si]
		until := last
		if k, ok := killedAt[s.Inst]; ok && k > s.T {
			until = min(until, k)
		}
		r.Steps++
		var right int64
		for _, e := range entries[si+1:] {
			if e.Inst != s.Inst {
				continue
			}
			if e.Ev == EvStep {
				until = min(until, e.T)
				break
			}
			est := time.Duration(e.OffsetMs)*time.Millisecond + skew(e)
			if e.T <= until && absDur(skew(e)-skew(s)) <= spec.StepSettle && absDur(est) <= spec.StepSettle {
				right = e.T
				break
			}
		}
		switch d := time.Duration(right-s.T) * time.Microsecond; {
		case right != 0:
			r.SlowestStepSync = max(r.SlowestStepSync, d)
			if d > spec.ClockSync {
				bad("%s measured the store's clock right again %v after its clock stepped to %v at %s: more than one clock sync (%v)",
					s.Inst, d, skew(s).Round(time.Millisecond), fmtUs(s.T), spec.ClockSync)
			}
		case time.Duration(until-s.T)*time.Microsecond < spec.ClockSync:
			r.StepsUnjudged++
		default:
			bad("%s never measured the store's clock right again (within %v) in the %v after its clock stepped to %v at %s (one clock sync is %v)",
				s.Inst, spec.StepSettle, time.Duration(until-s.T)*time.Microsecond, skew(s).Round(time.Millisecond), fmtUs(s.T), spec.ClockSync)
		}
		var run int64
		for _, lr := range order {
			if lr.inst == s.Inst && lr.start >= s.T && lr.start <= until && lr.start-lr.slot*1000 >= -spec.Tolerance.Microseconds() && (run == 0 || lr.start < run) {
				run = lr.start
			}
		}
		if run == 0 {
			r.StepsWithoutRun++
		} else {
			r.SlowestStepRun = max(r.SlowestStepRun, time.Duration(run-s.T)*time.Microsecond)
		}
	}
}

// unconfirmedFinish reports whether a completed run's Finish may not have
// reached the store: its process was killed within a second of its end
// line, or a fault cutting its instance from the store began before its
// end line (or within a second after) and ended after it.
func unconfirmedFinish(lr *ledgerRun, faults []Fault, killedAt map[string]int64) bool {
	const window = int64(time.Second / time.Microsecond)
	if k, ok := killedAt[lr.inst]; ok && k >= lr.end && k-lr.end <= window {
		return true
	}
	for _, f := range faults {
		if !f.Kind.outage() || f.End.IsZero() || !f.hits(lr.inst) {
			continue
		}
		if f.Start.UnixMicro() <= lr.end+window && f.End.UnixMicro() >= lr.end {
			return true
		}
	}
	return false
}

const tsFormat = "15:04:05.000"

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(tsFormat) }
func fmtUs(us int64) string { return time.UnixMicro(us).UTC().Format("15:04:05.000000") }

func instList(rs []*ledgerRun) string {
	parts := make([]string, 0, len(rs))
	for _, lr := range rs {
		end := "no end"
		if lr.end != 0 {
			end = lr.result
			if lr.cause != "" {
				end += " (" + lr.cause + ")"
			}
		}
		parts = append(parts, fmt.Sprintf("#%d %s %s–%s %s", lr.attempt, lr.inst, fmtUs(lr.start), fmtUs(lr.end), end))
	}
	return strings.Join(parts, "; ")
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
