package sqlitefile_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
)

// open opens n backends (n separate *sql.DB pools, as n processes would
// have) on one fresh file.
func open(t testing.TB, n int) []*sqlitebackend.Backend {
	t.Helper()
	return openPath(t, filepath.Join(t.TempDir(), "anarchon.db"), n)
}

// paths maps each handle the conformance test opened to its file, so
// that Reopen opens the same file again.
var paths sync.Map

func openPath(t testing.TB, path string, n int) []*sqlitebackend.Backend {
	t.Helper()
	bs := make([]*sqlitebackend.Backend, n)
	for i := range bs {
		b, err := sqlitefile.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		paths.Store(b, path)
		bs[i] = b
	}
	return bs
}

func TestConformance(t *testing.T) {
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			var out []anarchon.Backend
			for _, b := range open(t, n) {
				out = append(out, b)
			}
			return out
		},
		Lease: 300 * time.Millisecond,
		// Reopen opens the old handle's file again, as a restarted process.
		Reopen: func(t *testing.T, old anarchon.Backend) anarchon.Backend {
			path, ok := paths.Load(old)
			if !ok {
				t.Fatal("Reopen: a handle the test did not open")
			}
			return openPath(t, path.(string), 1)[0]
		},
		// Break drops the tables under the handle.
		Break: func(t *testing.T, b anarchon.Backend, job string) {
			for _, table := range []string{"results", "runs", "jobs"} {
				if _, err := b.(*sqlitebackend.Backend).DB().ExecContext(t.Context(), `DROP TABLE "anarchon_`+table+`"`); err != nil {
					t.Fatal(err)
				}
			}
		},
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// oddName is a 200-character name with quotes, a backslash, SQL comment
// and LIKE characters and non-ASCII letters.
func oddName() string {
	n := `it's "odd" \ %_ ;-- DROP TABLE x; Ωμέγα 日本語 ` + randHex(4)
	for utf8.RuneCountInString(n) < 200 {
		n += "ü"
	}
	return n
}

func TestJobNameRoundTrip(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1)[0]
	job := oddName()
	if err := b.PrepareJob(ctx, anarchon.PrepareJobInput{Job: job, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	in := anarchon.ClaimInput{Job: job, Slot: 60_000, Token: "t1", InstanceID: "i1", HistorySize: 10}
	if ok, err := b.Claim(ctx, in); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: 60_000, Token: "t1", InstanceID: "i1", Status: anarchon.StatusSuccess, StartedAt: now, FinishedAt: now}, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	rs := b.Runs()
	out, err := rs.Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: 120_000, Token: "t2", InstanceID: "i1"}, Lease: time.Minute, AllowOverlap: true})
	if err != nil || out.Kind != anarchon.OutcomeWon {
		t.Fatalf("lease Claim = %+v, %v", out, err)
	}
	act, err := rs.Active(ctx, job)
	if err != nil || len(act) != 1 || act[0].Slot != 120_000 {
		t.Fatalf("Active = %+v, %v", act, err)
	}
	recs, err := b.History(ctx, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Job != job || recs[1].Status != anarchon.StatusSuccess || recs[0].Status != anarchon.StatusRunning {
		t.Fatalf("History = %+v", recs)
	}
	// Names differing only in a trailing character are different jobs.
	if ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job + "x", Slot: 60_000, Token: "t3", InstanceID: "i2"}); err != nil || !ok {
		t.Fatalf("Claim of another job = %v, %v", ok, err)
	}
}

func TestTrimNeverReopens(t *testing.T) {
	ctx := t.Context()
	b := open(t, 1)[0]
	const job = "trim"
	for i := range int64(5) {
		in := anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: fmt.Sprint("t", i), InstanceID: "a"}
		if ok, err := b.Claim(ctx, in); err != nil || !ok {
			t.Fatalf("Claim %d = %v, %v", i, ok, err)
		}
		if err := b.SaveResult(ctx, anarchon.SaveResultInput{Job: job, Result: anarchon.StoredResult{Slot: in.Slot, Token: in.Token, InstanceID: "a", Status: anarchon.StatusSuccess}, HistorySize: 2}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := b.History(ctx, job, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("History = %d records, %v; want 2", len(recs), err)
	}
	for i := range int64(3) {
		ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: "late", InstanceID: "b"})
		if err != nil || ok {
			t.Fatalf("Claim of trimmed slot %d = %v, %v; want false", i, ok, err)
		}
		out, err := b.Runs().Claim(ctx, anarchon.RunClaim{ClaimInput: anarchon.ClaimInput{Job: job, Slot: i * 1000, Token: "late", InstanceID: "b"}, Lease: time.Second})
		if err != nil || out.Kind != anarchon.OutcomeDone {
			t.Fatalf("lease Claim of trimmed slot %d = %+v, %v; want done", i, out, err)
		}
	}
}

// TestConcurrentMigration starts 8 instances on an empty file at once:
// Init and PrepareJob must succeed for all.
func TestConcurrentMigration(t *testing.T) {
	sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(open(t, n))
	})
}

const childEnv = "ANARCHON_SQLITEFILE_RACE_CHILD"

// raceStep is the pace of the multi-process race: slot k is claimed by
// every process at start + k·raceStep.
const raceStep = 3 * time.Millisecond

// TestMultiProcessRace runs 8 OS processes (this test binary, re-executed)
// claiming the same 2,000 slots of one file; each slot must have exactly
// one winner.
func TestMultiProcessRace(t *testing.T) {
	procs, slots := 8, 2000
	if testing.Short() {
		slots = 300
	}
	path := filepath.Join(t.TempDir(), "race.db")
	b, err := sqlitefile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: "race", HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	b.Close(t.Context())

	type child struct {
		cmd   *exec.Cmd
		in    *os.File
		out   *bufio.Scanner
		wins  []int
		errTx strings.Builder
	}
	children := make([]*child, procs)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceChild$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"="+path+"|"+strconv.Itoa(i)+"|"+strconv.Itoa(slots))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, out: bufio.NewScanner(stdout)}
		cmd.Stderr = &c.errTx
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.in = stdin.(*os.File)
		children[i] = c
	}
	// Wait until every child has opened the file, then start them together.
	for i, c := range children {
		if !waitLine(c.out, "READY") {
			t.Fatalf("child %d did not get ready: %s", i, c.errTx.String())
		}
	}
	// Every child claims slot k at t0 + k·raceStep, so that the processes
	// arrive at each slot together instead of one running ahead.
	begin := time.Now()
	t0 := begin.Add(200 * time.Millisecond).UnixNano()
	for _, c := range children {
		fmt.Fprintf(c.in, "%d\n", t0)
		c.in.Close()
	}
	winners := make([]int, slots)
	for i, c := range children {
		for c.out.Scan() {
			line := c.out.Text()
			if s, ok := strings.CutPrefix(line, "WIN "); ok {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("child %d: bad line %q", i, line)
				}
				winners[n]++
				c.wins = append(c.wins, n)
			}
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.errTx.String())
		}
	}
	elapsed := time.Since(begin)
	for s, n := range winners {
		if n != 1 {
			t.Errorf("slot %d has %d winners, want exactly 1", s, n)
		}
	}
	var spread []string
	for _, c := range children {
		spread = append(spread, strconv.Itoa(len(c.wins)))
	}
	t.Logf("%d processes × %d slots in %v: wins per process %s", procs, slots, elapsed.Round(time.Millisecond), strings.Join(spread, ","))
}

func waitLine(sc *bufio.Scanner, want string) bool {
	for sc.Scan() {
		if sc.Text() == want {
			return true
		}
	}
	return false
}

// TestRaceChild is the body of one racing process; it does nothing unless
// run by TestMultiProcessRace.
func TestRaceChild(t *testing.T) {
	env := os.Getenv(childEnv)
	if env == "" {
		t.Skip("run by TestMultiProcessRace")
	}
	parts := strings.Split(env, "|")
	path, id := parts[0], parts[1]
	slots, _ := strconv.Atoi(parts[2])
	b, err := sqlitefile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx := context.Background()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	t0, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("start time %q: %v", line, err)
	}
	w := bufio.NewWriter(os.Stdout)
	for s := range slots {
		if d := time.Until(time.Unix(0, t0).Add(time.Duration(s) * raceStep)); d > 0 {
			time.Sleep(d) // pacing: every process reaches slot s together
		}
		ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: "race", Slot: int64(s) * 1000, Token: id + "-" + strconv.Itoa(s), InstanceID: id})
		if err != nil {
			t.Fatalf("slot %d: %v", s, err)
		}
		if ok {
			fmt.Fprintf(w, "WIN %d\n", s)
		}
	}
	w.Flush()
}
