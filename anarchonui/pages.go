package anarchonui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
)

// page is what every template is given.
type page struct {
	Title       string
	Nav         string // "jobs", "leases", "replicas"
	Base        string
	Store       string
	Instance    string
	ReadOnly    bool
	CSRF        string
	Flash       string
	FlashErr    string
	Self        string
	RefreshMS   int64
	MetaRefresh int
	Errors      []string // store errors met while reading, shown on the page
	Actions     actionSet
	MaxReason   int // the pause reason field's maxlength

	Jobs     []jobRow
	Job      *jobRow
	Slots    []slotRow
	Older    string // link to the next page of slots, "" on the last
	Total    int    // history records of the job
	Leases   []leaseRow
	Replicas []replicaRow
	NoLeases bool
	NoReg    bool
	Diffs    []anarchon.JobSetDiff
}

// actionSet says which buttons to show.
type actionSet struct {
	RunNow, Trigger, Pause, Resume, Paused bool
	ResumeCatchUp                          bool   // the "catch up" box beside Resume
	Key                                    string // a trigger key for this rendering
}

type jobRow struct {
	anarchon.JobInfo
	Next        []time.Time
	Last        *anarchon.RunRecord
	LastSuccess *anarchon.RunRecord
	Paused      bool
	PauseNote   string
	OptionList  []string
}

// actionArgs is what the "actions" template is given.
type actionArgs struct {
	P *page
	J jobRow
}

// nextArgs is what the "next" template is given: a job's next slots, one
// a line in the jobs table and on one line on the job's page.
type nextArgs struct {
	J     jobRow
	Lines bool
}

type slotRow struct {
	Slot     string // formatted
	SlotMS   int64
	Manual   bool
	Status   anarchon.Status // of the newest attempt
	Attempts []attemptRow
}

// attemptRow is one attempt of a slot, formatted in Go rather than by
// template functions: the page of a job may hold thousands of them.
type attemptRow struct {
	Attempt  int
	Instance string
	Status   anarchon.Status
	Claimed  string // when the claim was made (store clock); for a slot not run, when it was settled
	Start    string
	Duration string
	Error    string
	ErrClass string // "why" for the reason of a slot not run (missed, skipped, paused, replaced), "err" otherwise
	Output   string // its tail
	OutLen   int
}

type leaseRow struct {
	Job      string
	Run      anarchon.ActiveRun
	TimeLeft time.Duration
}

func (h *handler) newPage(title, nav string) *page {
	p := &page{Title: title, Nav: nav, MaxReason: maxPauseReason}
	if !h.o.ReadOnly {
		p.Actions = actionSet{
			RunNow: h.act.RunNow != nil, Trigger: h.act.Trigger != nil,
			Pause: h.act.Pause != nil, Resume: h.act.Resume != nil,
			ResumeCatchUp: h.act.Resume != nil && h.act.ResumeCatchUp != nil,
		}
		if p.Actions.Trigger {
			p.Actions.Key = rand.Text()
		}
	}
	p.Actions.Paused = h.act.Paused != nil
	return p
}

func (h *handler) fail(p *page, what string, err error) {
	p.Errors = append(p.Errors, what+": "+err.Error())
}

// storeNow is the store's clock as this instance estimates it.
func (h *handler) storeNow() time.Time { return h.o.Now().Add(h.s.ClockOffset()) }

func (h *handler) jobRow(ctx context.Context, p *page, j anarchon.JobInfo, history bool) jobRow {
	row := jobRow{JobInfo: j, OptionList: optionList(j)}
	row.Next, _ = h.s.NextSlots(j.Name, h.storeNow(), 3)
	if history {
		recs, err := h.s.History(ctx, j.Name, j.Options.HistorySize)
		if err != nil {
			h.fail(p, "history of "+j.Name, err)
		}
		row.Last, row.LastSuccess = lastOutcomes(recs)
	}
	if h.act.Paused != nil {
		paused, note, err := h.act.Paused(ctx, j.Name)
		if err != nil {
			h.fail(p, "pause state of "+j.Name, err)
		}
		row.Paused, row.PauseNote = paused, note
	}
	return row
}

// lastOutcomes returns the newest record that ended (not running) and the
// newest success, from records newest first.
func lastOutcomes(recs []anarchon.RunRecord) (last, success *anarchon.RunRecord) {
	for i := range recs {
		r := &recs[i]
		if last == nil && r.Status != anarchon.StatusRunning {
			last = r
		}
		if success == nil && r.Status == anarchon.StatusSuccess {
			success = r
		}
		if last != nil && success != nil {
			break
		}
	}
	return last, success
}

func optionList(j anarchon.JobInfo) []string {
	o := j.Options
	var out []string
	add := func(k string, v any) { out = append(out, fmt.Sprintf("%s %v", k, v)) }
	if j.Leased {
		add("lease", o.Lease)
		add("attempts", o.MaxAttempts)
		add("overlap", o.Overlap)
		if o.CatchUp.Window > 0 {
			add("catch-up", fmt.Sprintf("%v ×%d", o.CatchUp.Window, o.CatchUp.Max))
		}
	} else {
		out = append(out, "no lease")
	}
	add("max late", o.MaxLate)
	if o.Jitter > 0 {
		add("jitter", o.Jitter)
	}
	if o.Offset > 0 {
		add("offset", o.Offset)
	}
	if o.Timeout > 0 {
		add("timeout", o.Timeout)
	}
	add("history", o.HistorySize)
	if o.HistoryTTL > 0 {
		add("history TTL", o.HistoryTTL)
	}
	return out
}

func (h *handler) jobsPage(w http.ResponseWriter, r *http.Request) {
	p := h.newPage("Jobs", "jobs")
	for _, j := range h.s.Jobs() {
		p.Jobs = append(p.Jobs, h.jobRow(r.Context(), p, j, true))
	}
	h.render(w, r, http.StatusOK, "jobs.html", p)
}

func (h *handler) findJob(name string) (anarchon.JobInfo, bool) {
	for _, j := range h.s.Jobs() {
		if j.Name == name {
			return j, true
		}
	}
	return anarchon.JobInfo{}, false
}

// jobPage shows one job and its slots, PageSize at a time, newest first;
// ?before=<unix ms> starts below that slot.
func (h *handler) jobPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	j, ok := h.findJob(name)
	if !ok {
		p := h.newPage("No such job", "jobs")
		p.Errors = []string{fmt.Sprintf("no job %q is registered on %s", name, h.s.InstanceID())}
		h.render(w, r, http.StatusNotFound, "error.html", p)
		return
	}
	p := h.newPage(name, "jobs")
	row := h.jobRow(r.Context(), p, j, false)
	p.Job = &row
	recs, err := h.s.History(r.Context(), name, 0)
	if err != nil {
		h.fail(p, "history", err)
	}
	p.Total = len(recs)
	row.Last, row.LastSuccess = lastOutcomes(recs)
	var before int64
	if b := r.URL.Query().Get("before"); b != "" {
		before, _ = strconv.ParseInt(b, 10, 64)
	}
	p.Slots, p.Older = groupSlots(recs, before, h.o.PageSize)
	if p.Older != "" {
		p.Older = h.o.BasePath + "job/" + pathEscape(name) + "?before=" + p.Older
	}
	h.render(w, r, http.StatusOK, "job.html", p)
}

// groupSlots groups records (newest first, as History returns them) into
// slots, one row per slot with its attempts newest first, as History and
// the daemon's history command list them, and returns at most n slots
// older than before (Unix ms; 0: from the newest) and the before value of
// the next page ("" if none).
func groupSlots(recs []anarchon.RunRecord, before int64, n int) ([]slotRow, string) {
	var out []slotRow
	i := 0
	if before != 0 {
		// recs are sorted by slot, descending
		i = sort.Search(len(recs), func(k int) bool { return recs[k].Slot.UnixMilli() < before })
	}
	for i < len(recs) {
		if len(out) == n {
			return out, strconv.FormatInt(out[len(out)-1].SlotMS, 10)
		}
		slot := recs[i].Slot
		j := i
		for j < len(recs) && recs[j].Slot.Equal(slot) {
			j++
		}
		atts := slices.Clone(recs[i:j])
		// Newest attempt first, the order of the history: a store may keep
		// a slot's records in another order, so they are sorted here.
		slices.SortStableFunc(atts, func(a, b anarchon.RunRecord) int {
			if c := cmpInt(int64(b.Attempt), int64(a.Attempt)); c != 0 {
				return c
			}
			return b.StartedAt.Compare(a.StartedAt)
		})
		row := slotRow{Slot: formatTS(slot), SlotMS: slot.UnixMilli(), Status: atts[0].Status, Attempts: make([]attemptRow, len(atts))}
		for k, a := range atts {
			row.Manual = row.Manual || a.Manual
			row.Attempts[k] = attemptRow{
				Attempt: a.Attempt, Instance: a.InstanceID, Status: a.Status, Claimed: formatTS(a.ClaimedAt), Start: formatTS(a.StartedAt),
				Duration: ran(a), Error: a.Error, ErrClass: errClass(a.Status), Output: tail(a.Output), OutLen: len(a.Output),
			}
		}
		out = append(out, row)
		i = j
	}
	return out, ""
}

// errClass is the class of an attempt's error cell: a slot not run has a
// reason, shown apart from a failed run's error.
func errClass(st anarchon.Status) string {
	if st.NotRun() || st == anarchon.StatusReplaced {
		return "why"
	}
	return "err"
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pathEscape(s string) string { return url.PathEscape(s) }

func (h *handler) leasesPage(w http.ResponseWriter, r *http.Request) {
	p := h.newPage("Leases", "leases")
	lb, ok := anarchon.As[anarchon.LeaseBackend](h.s.Backend())
	var rs anarchon.RunStore
	if ok {
		rs = lb.Runs()
	}
	if rs == nil {
		p.NoLeases = true
		h.render(w, r, http.StatusOK, "leases.html", p)
		return
	}
	now := h.storeNow()
	for _, j := range h.s.Jobs() {
		if !j.Leased {
			continue
		}
		act, err := rs.Active(r.Context(), j.Name)
		if err != nil {
			h.fail(p, "leases of "+j.Name, err)
			continue
		}
		for _, a := range act {
			left := a.LeaseUntil.Sub(now)
			if a.State != anarchon.RunStateRunning {
				left = 0
			}
			p.Leases = append(p.Leases, leaseRow{Job: j.Name, Run: a, TimeLeft: left})
		}
	}
	h.render(w, r, http.StatusOK, "leases.html", p)
}

// formatTS is the one format of every time the pages show: UTC, to the
// millisecond, as the store's clock and the history's records are read.
func formatTS(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// ran is how long a run's handler ran, "–" if it did not.
func ran(r anarchon.RunRecord) string {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return "–"
	}
	return r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
}

// tail is the end of a run's output, at most 2 KiB.
func tail(s string) string {
	const max = 2048
	if len(s) > max {
		return "…" + strings.ToValidUTF8(s[len(s)-max:], "")
	}
	return s
}

var funcs = template.FuncMap{
	"ts":       formatTS,
	"errClass": errClass,
	// wall is t on the wall clock of a job's zone, for a tooltip only: the
	// page itself shows every time as ts does, so that one row never mixes
	// two formats.
	"wall": func(t time.Time, zone string) string {
		if t.IsZero() || zone == "" {
			return ""
		}
		loc, err := anarchon.LoadLocation(zone)
		if err != nil {
			return ""
		}
		return t.In(loc).Format("2006-01-02 15:04:05 MST") + " in " + zone
	},
	"dur": func(d time.Duration) string {
		switch {
		case d <= 0:
			return "0s"
		case d < time.Second:
			return d.Round(time.Millisecond).String()
		case d < time.Minute:
			return d.Round(10 * time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	},
	"offset": func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() },
	"path":   pathEscape,
	// domid is a job's name as part of an element id that htmx can look up
	// as a CSS selector ("#id"): a name may hold any printable character,
	// and hex keeps distinct names distinct.
	"domid":  func(name string) string { return hex.EncodeToString([]byte(name)) },
	"msTime": func(ms int64) time.Time { return time.UnixMilli(ms).UTC() },
	"pj": func(p *page, j any) actionArgs {
		switch j := j.(type) {
		case jobRow:
			return actionArgs{P: p, J: j}
		case *jobRow:
			return actionArgs{P: p, J: *j}
		}
		return actionArgs{P: p}
	},
	"ms": func(t time.Time) int64 { return t.UnixMilli() },
	"nextIn": func(j any, lines bool) nextArgs {
		switch j := j.(type) {
		case jobRow:
			return nextArgs{J: j, Lines: lines}
		case *jobRow:
			return nextArgs{J: *j, Lines: lines}
		}
		return nextArgs{Lines: lines}
	},
}
