package sqlbackendtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
)

// raceEnv tells a re-executed test binary that it is a child of
// MultiProcessRace, and its part: "id|slots|step|arg".
const raceEnv = "ANARCHON_SQL_RACE_CHILD"

// RaceJob is the job whose slots MultiProcessRace contests.
const RaceJob = "race"

// Race configures [MultiProcessRace].
type Race struct {
	// Procs is the number of OS processes.
	Procs int
	// Slots is the number of slots of RaceJob each process claims, in
	// order, with tokens of its own.
	Slots int
	// Step paces the processes: each claims slot k at start + k·Step, so
	// that all arrive at each slot together rather than one running
	// ahead. Zero: back to back from the common start.
	Step time.Duration
	// Arg is handed to open in every process: a file path, a table
	// prefix.
	Arg string
	// Child is the name of the test function that calls [RaceChild] in
	// the package under test, e.g. "TestRaceChild".
	Child string
	// Env is added to the children's environment.
	Env []string
}

// Opener opens a backend on arg (Race.Arg) in a parent or child process
// of MultiProcessRace; the backend is closed when t ends.
type Opener func(t testing.TB, arg string) anarchon.Backend

// MultiProcessRace prepares RaceJob through open, then runs r.Procs OS
// processes (the test binary, re-executed to run only r.Child) that
// start together and claim the same r.Slots slots, and fails t unless
// each slot has exactly one winner. It logs the wins per process.
func MultiProcessRace(t *testing.T, open Opener, r Race) {
	b := open(t, r.Arg)
	if err := b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: RaceJob, HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd  *exec.Cmd
		in   interface{ Close() error }
		w    *bufio.Writer
		out  *bufio.Scanner
		text strings.Builder // what it wrote besides the protocol: test output
		wins int
	}
	children := make([]*child, r.Procs)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^"+r.Child+"$")
		part := strings.Join([]string{strconv.Itoa(i), strconv.Itoa(r.Slots), strconv.FormatInt(int64(r.Step), 10), r.Arg}, "|")
		cmd.Env = append(append(os.Environ(), r.Env...), raceEnv+"="+part)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, in: stdin, w: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
		cmd.Stderr = &c.text
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	for i, c := range children {
		ready := false
		for !ready && c.out.Scan() {
			ready = c.out.Text() == "READY"
			if !ready {
				c.text.WriteString(c.out.Text() + "\n")
			}
		}
		if !ready {
			c.cmd.Wait()
			t.Fatalf("child %d did not get ready:\n%s", i, c.text.String())
		}
	}
	// Every child starts at t0, far enough ahead that all have read it.
	begin := time.Now()
	t0 := begin.Add(200 * time.Millisecond).UnixNano()
	for _, c := range children {
		fmt.Fprintf(c.w, "%d\n", t0)
		c.w.Flush()
		c.in.Close()
	}
	winners := make([]int, r.Slots)
	for i, c := range children {
		for c.out.Scan() {
			line := c.out.Text()
			s, ok := strings.CutPrefix(line, "WIN ")
			if !ok {
				c.text.WriteString(line + "\n")
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n >= r.Slots {
				t.Fatalf("child %d: bad line %q", i, line)
			}
			winners[n]++
			c.wins++
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.text.String())
		}
	}
	elapsed := time.Since(begin)
	for s, n := range winners {
		if n != 1 {
			t.Errorf("slot %d has %d winners, want exactly 1", s, n)
		}
	}
	spread := make([]string, len(children))
	for i, c := range children {
		spread[i] = strconv.Itoa(c.wins)
	}
	t.Logf("%d processes × %d slots in %v: wins per process %s", r.Procs, r.Slots, elapsed.Round(time.Millisecond), strings.Join(spread, ","))
}

// RaceChild is the body of one process of [MultiProcessRace], to be
// called by the test function named Race.Child; it skips unless run by
// MultiProcessRace. It opens a backend with open, says READY, waits for
// the common start and claims the slots, printing "WIN <k>" for each
// slot k it won.
func RaceChild(t *testing.T, open Opener) {
	env := os.Getenv(raceEnv)
	if env == "" {
		t.Skip("run by MultiProcessRace")
	}
	parts := strings.SplitN(env, "|", 4)
	if len(parts) != 4 {
		t.Fatalf("%s=%q", raceEnv, env)
	}
	id, arg := parts[0], parts[3]
	slots, err1 := strconv.Atoi(parts[1])
	step, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s=%q", raceEnv, env)
	}
	ctx := context.Background()
	b := open(t, arg)
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	t0, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("start time %q: %v", line, err)
	}
	start := time.Unix(0, t0)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for s := range slots {
		if d := time.Until(start.Add(time.Duration(s) * time.Duration(step))); d > 0 {
			time.Sleep(d) // pacing: every process reaches slot s together
		}
		ok, err := b.Claim(ctx, anarchon.ClaimInput{Job: RaceJob, Slot: int64(s) * 1000, Token: id + "-" + strconv.Itoa(s), InstanceID: id})
		if err != nil {
			w.Flush()
			t.Fatalf("slot %d: %v", s, err)
		}
		if ok {
			fmt.Fprintf(w, "WIN %d\n", s)
		}
	}
}
