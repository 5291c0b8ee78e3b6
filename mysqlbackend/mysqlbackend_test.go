package mysqlbackend_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/go-sql-driver/mysql"
)

const envDSN = "ANARCHON_TEST_MYSQL_DSN"

// serverDSN returns the test server's DSN, or skips (fails under CI=true)
// without one.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		msg := envDSN + " is not set: start a server with scripts/services/mysql.sh and export its output"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freshPrefix returns a new table prefix whose tables are dropped when t
// ends.
func freshPrefix(t testing.TB) string {
	t.Helper()
	prefix := "t" + randHex(5) + "_"
	dsn := serverDSN(t)
	t.Cleanup(func() { dropAll(t, dsn, prefix) })
	return prefix
}

func dropAll(t testing.TB, dsn, prefix string) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer db.Close()
	for _, table := range []string{"results", "runs", "jobs", "instances"} {
		if _, err := db.Exec("DROP TABLE IF EXISTS `" + prefix + table + "`"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// open opens n backends, each with its own pool (Open's), on prefix.
func open(t testing.TB, n int, prefix string) []*mysqlbackend.Backend {
	t.Helper()
	dsn := serverDSN(t)
	bs := make([]*mysqlbackend.Backend, n)
	for i := range bs {
		b, err := mysqlbackend.Open(dsn, &mysqlbackend.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		bs[i] = b
	}
	return bs
}

func raceRounds() int {
	if testing.Short() {
		return 300
	}
	return 2000
}

// TestConformance runs anarchontest on the server, with the races of 16
// connection pools claiming 2,000 contested slots.
func TestConformance(t *testing.T) {
	serverDSN(t)
	anarchontest.Run(t, anarchontest.Harness{
		New: func(t *testing.T, n int) []anarchon.Backend {
			return sqlbackendtest.Backends(open(t, n, freshPrefix(t)))
		},
		Lease:   300 * time.Millisecond,
		Break:   dropTables,
		Racers:  16,
		Handles: 16,
		Rounds:  raceRounds(),
	})
}

func dropTables(t *testing.T, b anarchon.Backend, job string) {
	prefix := b.(interface{ Prefix() string }).Prefix()
	db, err := sql.Open("mysql", serverDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"results", "runs", "jobs"} {
		if _, err := db.Exec("DROP TABLE `" + prefix + table + "`"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConcurrentMigration(t *testing.T) {
	serverDSN(t)
	sqlbackendtest.ConcurrentMigration(t, func(t testing.TB, n int) []anarchon.Backend {
		return sqlbackendtest.Backends(open(t, n, freshPrefix(t)))
	})
}

func TestVersionCheck(t *testing.T) {
	for v, ok := range map[string]bool{
		"10.11.14-MariaDB-0+deb12u2": true, "11.4.2-MariaDB": true, "10.6.1-MariaDB": false,
		"8.0.36": true, "8.4.0": true, "5.7.44-log": false,
	} {
		if err := mysqlbackend.CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}

func TestPermanent(t *testing.T) {
	if !mysqlbackend.IsPermanent(fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1146})) {
		t.Error("1146 (no table) is not permanent")
	}
	if mysqlbackend.IsPermanent(&mysql.MySQLError{Number: 1213}) {
		t.Error("1213 (deadlock) is permanent")
	}
}

const childEnv = "ANARCHON_MYSQL_RACE_CHILD"

// TestMultiProcessRace runs 8 OS processes (this test binary, re-executed)
// that claim the same 2,000 slots, all starting together; each slot must
// have exactly one winner.
func TestMultiProcessRace(t *testing.T) {
	dsn := serverDSN(t)
	procs, slots := 8, raceRounds()
	prefix := freshPrefix(t)
	b := open(t, 1, prefix)[0]
	if err := b.PrepareJob(t.Context(), anarchon.PrepareJobInput{Job: "race", HistorySize: 10}); err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd  *exec.Cmd
		in   interface{ Close() error }
		w    *bufio.Writer
		out  *bufio.Scanner
		errs strings.Builder
	}
	children := make([]*child, procs)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceChild$")
		cmd.Env = append(os.Environ(), childEnv+"="+prefix+"|"+strconv.Itoa(i)+"|"+strconv.Itoa(slots), envDSN+"="+dsn)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, in: stdin, w: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
		cmd.Stderr = &c.errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	for i, c := range children {
		if !waitLine(c.out, "READY") {
			t.Fatalf("child %d did not get ready: %s", i, c.errs.String())
		}
	}
	for _, c := range children { // start them together
		c.w.WriteString("GO\n")
		c.w.Flush()
		c.in.Close()
	}
	winners := make([]int, slots)
	for i, c := range children {
		for c.out.Scan() {
			if s, ok := strings.CutPrefix(c.out.Text(), "WIN "); ok {
				n, err := strconv.Atoi(s)
				if err != nil || n < 0 || n >= slots {
					t.Fatalf("child %d: bad line %q", i, c.out.Text())
				}
				winners[n]++
			}
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.errs.String())
		}
	}
	for s, n := range winners {
		if n != 1 {
			t.Errorf("slot %d has %d winners, want exactly 1", s, n)
		}
	}
}

func waitLine(sc *bufio.Scanner, want string) bool {
	for sc.Scan() {
		if sc.Text() == want {
			return true
		}
	}
	return false
}

// TestRaceChild is one racing process of TestMultiProcessRace; it does
// nothing otherwise.
func TestRaceChild(t *testing.T) {
	env := os.Getenv(childEnv)
	if env == "" {
		t.Skip("run by TestMultiProcessRace")
	}
	parts := strings.Split(env, "|")
	prefix, id := parts[0], parts[1]
	slots, _ := strconv.Atoi(parts[2])
	b, err := mysqlbackend.Open(serverDSN(t), &mysqlbackend.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx := context.Background()
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); line != "GO\n" {
		t.Fatalf("start line %q", line)
	}
	w := bufio.NewWriter(os.Stdout)
	for s := range slots {
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
