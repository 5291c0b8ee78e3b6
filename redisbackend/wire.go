package redisbackend

import (
	"strconv"
	"time"

	"github.com/anarchon/anarchon"
)

// What the scripts store. Records are JSON objects whose numbers are
// decimal strings: Lua's cjson prints numbers with 14 significant digits,
// which is not enough for every int64, so the scripts never encode a number
// as a JSON number. Field names are short and stable: two versions of the
// backend share the store during a rolling deploy (SPEC §9); readers ignore
// fields they do not know.

// wireClaim is a claim record: in HASH {prefix:job}:claims, field = token,
// or the run state of the slot's current holder (see wireRun).
type wireClaim struct {
	Slot     string `json:"-"` // from the history member, set when read
	Instance string `json:"inst"`
	At       string `json:"at"` // store clock, Unix ms
	Attempt  string `json:"att"`
	Manual   string `json:"man,omitempty"` // "1" for RecordManualRun
	Token    string `json:"-"`             // the hash field, set when read
}

func (w wireClaim) record() anarchon.ClaimRecord {
	slot, _ := strconv.ParseInt(w.Slot, 10, 64)
	at, _ := strconv.ParseInt(w.At, 10, 64)
	att, _ := strconv.Atoi(w.Attempt)
	return anarchon.ClaimRecord{
		Slot:       slot,
		Token:      w.Token,
		InstanceID: w.Instance,
		ClaimedAt:  time.UnixMilli(at).UTC(),
		Attempt:    att,
		Manual:     w.Manual == "1",
	}
}

// wireRun is the state of one slot, HASH {prefix:job}:run, field = slot.
type wireRun struct {
	Token      string `json:"tok"`
	Instance   string `json:"inst"`
	Attempt    string `json:"att"`
	State      string `json:"st"` // running, released, done, missed, skipped, or claimed (plain claim)
	LeaseUntil string `json:"lu"` // store clock, Unix ms
	At         string `json:"at"` // when the holder claimed, store clock, Unix ms
	Status     string `json:"stat,omitempty"`
}

// wireResult is a stored result, HASH {prefix:job}:results, field = the
// history member ("slot/token").
type wireResult struct {
	Slot       int64     `json:"slot,string"`
	Token      string    `json:"tok"`
	Instance   string    `json:"inst"`
	Attempt    int       `json:"att"`
	Status     string    `json:"stat"`
	StartedAt  time.Time `json:"start"`
	FinishedAt time.Time `json:"end"`
	Error      string    `json:"err,omitempty"`
	Output     string    `json:"out,omitempty"`
	Manual     bool      `json:"man,omitempty"`
}

func encodeResult(r anarchon.StoredResult) wireResult {
	return wireResult{
		Slot:       r.Slot,
		Token:      r.Token,
		Instance:   r.InstanceID,
		Attempt:    r.Attempt,
		Status:     string(r.Status),
		StartedAt:  r.StartedAt,
		FinishedAt: r.FinishedAt,
		Error:      anarchon.EscapeText(r.Error), // JSON keeps valid UTF-8 only
		Output:     anarchon.EscapeText(r.Output),
		Manual:     r.Manual,
	}
}

func (w wireResult) result() anarchon.StoredResult {
	return anarchon.StoredResult{
		Slot:       w.Slot,
		Token:      w.Token,
		InstanceID: w.Instance,
		Attempt:    w.Attempt,
		Status:     anarchon.Status(w.Status),
		StartedAt:  w.StartedAt,
		FinishedAt: w.FinishedAt,
		Error:      w.Error,
		Output:     w.Output,
		Manual:     w.Manual,
	}
}

// wireEvent is the payload published on the "<prefix>:runs" channel.
type wireEvent struct {
	Job  string `json:"job"`
	Slot string `json:"slot"`
	Kind string `json:"kind"` // "released" or "finished"
}
