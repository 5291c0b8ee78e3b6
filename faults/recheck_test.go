package faults_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anarchon/anarchon/faults"
)

// TestRecheck checks a kept run again from its files alone: set
// ANARCHON_FAULTS_RECHECK to a directory holding ledger.jsonl and
// faults.jsonl (as ANARCHON_FAULTS_KEEP leaves them). The store is not
// read, so the checks that need its history are skipped. The run is taken
// to use this package's default job settings.
func TestRecheck(t *testing.T) {
	dir := os.Getenv("ANARCHON_FAULTS_RECHECK")
	if dir == "" {
		t.Skip("ANARCHON_FAULTS_RECHECK is not set: it names a directory kept with ANARCHON_FAULTS_KEEP")
	}
	entries, err := faults.ReadLedger(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty ledger")
	}
	var fs []faults.Fault
	f, err := os.Open(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var x faults.Fault
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			t.Fatalf("faults.jsonl: %v", err)
		}
		fs = append(fs, x)
	}
	c := loadConfig(t)
	first, last := entries[0].Time(), entries[len(entries)-1].Time()
	spec := faults.Spec{
		LeasedJob: "leased", PlainJob: "plain",
		LeasedInterval: c.interval, PlainInterval: c.plainInterval, Lease: c.lease, Work: c.work,
		From: first.Add(2 * c.interval), To: last.Add(-2 * c.interval),
	}
	rep := faults.Check(spec, entries, nil, fs)
	rep.Backend = filepath.Base(dir) + " (ledger only)"
	t.Logf("%s to %s\n%s", first.UTC().Format(time.TimeOnly), last.UTC().Format(time.TimeOnly), rep)
}
