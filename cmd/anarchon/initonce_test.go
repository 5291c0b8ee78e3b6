package main

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/membackend"
)

// initCounting is a memory store, shared by every command of a test (its
// Close does nothing), that counts the calls of its Init: the call where Redis logs its start-up
// report (persistence, topology).
type initCounting struct {
	*membackend.Backend
	inits *atomic.Int32
}

func (b initCounting) Init(ctx context.Context) error {
	b.inits.Add(1)
	return b.Backend.Init(ctx)
}

// Close leaves the shared store open for the next command.
func (initCounting) Close(context.Context) error { return nil }

var (
	countedStore = membackend.New(nil)
	countedInits atomic.Int32
)

func init() {
	openers["initcount"] = func(*url.URL, string, string, bool) (anarchon.Backend, error) {
		return initCounting{countedStore, &countedInits}, nil
	}
	storeParams["initcount"] = []string{}
}

// Each command initialises its store once: history and status found it
// three or four times (the look for anarchon's data, the command's own
// Init, then the scheduler's for the registry and for each job's last
// run), and Redis logged its start-up report as often.
func TestStoreInitialisedOnce(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "jobs.cron", "# name: j\n@daily echo hi\n# name: boot\n@reboot echo up\n")
	const store = "initcount:"
	if code, _, errOut := cli(t, "run-now", "j", "--crontab", ct, "--store", store); code != 0 {
		t.Fatalf("run-now: exit %d %s", code, errOut)
	}
	for _, args := range [][]string{
		{"history", "j"},
		{"history", "j", "--crontab", ct},
		{"history", "boot", "--crontab", ct},
		{"status"},
		{"status", "--json"},
		{"status", "--crontab", ct},
		{"run-now", "j", "--crontab", ct},
		{"pause", "j", "--crontab", ct},
		{"resume", "j", "--crontab", ct},
	} {
		countedInits.Store(0)
		code, out, errOut := cli(t, append(args, "--store", store)...)
		if code != 0 {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
		if n := countedInits.Load(); n != 1 {
			t.Errorf("%q: Init called %d times, want once", args, n)
		}
	}
}
