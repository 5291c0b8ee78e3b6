package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Ledger event kinds, the Ev field of an [Entry].
const (
	EvBoot     = "boot"      // an instance process started its scheduler
	EvBootFail = "boot_fail" // Start failed (the store was unreachable); the process exits
	EvStart    = "start"     // a handler started
	EvEnd      = "end"       // a handler returned
	EvStop     = "stop"      // the process stopped its scheduler on SIGTERM
	EvOffset   = "offset"    // the scheduler measured its offset to the store's clock (OffsetMs; Cause: why, as in anarchon.EventClockOffset)
	EvStep     = "step"      // the instance's clock was stepped (clock_step); Local is read under the new offset, OffsetMs is not set
)

// Handler results, the Result field of an EvEnd [Entry].
const (
	ResultCompleted = "completed" // the handler did all its work
	ResultStopped   = "stopped"   // the handler saw its context end and stopped early
)

// Entry is one line of the ledger. Times are Unix microseconds of the host
// clock (the clock the stores on this host use too); Local is the
// instance's own, possibly skewed, clock.
type Entry struct {
	Ev       string `json:"ev"`
	Inst     string `json:"inst"`              // instance ID; one per process ("i2.3": instance 2, third process)
	PID      int    `json:"pid,omitempty"`     // boot: the process ID
	Job      string `json:"job,omitempty"`     // start, end
	Slot     int64  `json:"slot,omitempty"`    // start, end: Unix ms
	Attempt  int    `json:"attempt,omitempty"` // start, end
	Token    string `json:"token,omitempty"`   // start, end: the claim's token
	Fence    uint64 `json:"fence,omitempty"`   // start, end: the run's fencing token (anarchon.Run.Fence); 0 for none
	T        int64  `json:"t"`                 // host clock, Unix µs
	Local    int64  `json:"local"`             // the instance's clock, Unix µs
	OffsetMs int64  `json:"offset_ms"`         // the scheduler's estimate of store clock minus its clock, ms
	Result   string `json:"result,omitempty"`  // end: ResultCompleted or ResultStopped
	Cause    string `json:"cause,omitempty"`   // end (stopped), boot_fail, offset: why
}

// Time returns e.T as a time.Time.
func (e Entry) Time() time.Time { return time.UnixMicro(e.T) }

// Ledger appends entries to a file shared by every instance. The file is
// opened with O_APPEND and each entry is one write(2) of one line, so lines
// from concurrent processes never interleave and a process killed with
// SIGKILL leaves only whole lines behind (the kernel has the data once the
// write returns).
type Ledger struct {
	mu sync.Mutex
	f  *os.File
}

// OpenLedger opens (creating it if absent) the ledger file at path for
// appending.
func OpenLedger(path string) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("faults: empty ledger path")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("faults: open ledger: %w", err)
	}
	return &Ledger{f: f}, nil
}

// Append writes e as one JSON line with a single write.
func (l *Ledger) Append(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("faults: encode ledger entry: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("faults: append to ledger: %w", err)
	}
	return nil
}

// Close closes the file.
func (l *Ledger) Close() error { return l.f.Close() }

// ReadLedger reads every entry of the ledger at path. A line that does not
// decode is an error naming its line number: appends are whole lines, so a
// broken line means the file was written by something else.
func ReadLedger(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("faults: read ledger: %w", err)
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("faults: ledger %s line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("faults: read ledger: %w", err)
	}
	return out, nil
}
