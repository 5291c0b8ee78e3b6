package mysqlbackend_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchontest"
	"github.com/anarchon/anarchon/mysqlbackend"
	"github.com/anarchon/anarchon/sqlbackend"
	"github.com/anarchon/anarchon/sqlbackend/sqlbackendtest"
	"github.com/go-sql-driver/mysql"
)

const envDSN = "ANARCHON_TEST_MYSQL_DSN"

// serverDSN returns the test server's DSN, or skips (fails under CI=true)
// without one.
func serverDSN(t testing.TB) string {
	t.Helper()
	return sqlbackendtest.ServerEnv(t, envDSN, "scripts/services/mysql.sh")
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
	for _, table := range []string{"results", "runs", "jobs", "instances", "control", "triggers"} {
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

// TestOldSchema checks that Init adds the fence column to a database made
// before it, with racing instances.
func TestOldSchema(t *testing.T) {
	serverDSN(t)
	sqlbackendtest.OldSchema(t, func(t testing.TB, n int) []anarchon.Backend {
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

// openOne is the race's sqlbackendtest.Opener: one backend on prefix.
func openOne(t testing.TB, prefix string) anarchon.Backend { return open(t, 1, prefix)[0] }

// TestMultiProcessRace runs 8 OS processes (this test binary, re-executed)
// that claim the same 2,000 slots, all starting together; each slot must
// have exactly one winner.
func TestMultiProcessRace(t *testing.T) {
	serverDSN(t)
	sqlbackendtest.MultiProcessRace(t, openOne, sqlbackendtest.Race{
		Procs: 8, Slots: raceRounds(), Arg: freshPrefix(t), Child: "TestRaceChild",
	})
}

// TestRaceChild is one racing process of TestMultiProcessRace; it does
// nothing otherwise.
func TestRaceChild(t *testing.T) { sqlbackendtest.RaceChild(t, openOne) }

// TestServerCheck runs Init's server check against answers a server
// might give: what the backend needs passes (Init then fails at the
// migration, which this fake connection refuses), anything else is a
// permanent error naming the setting.
func TestServerCheck(t *testing.T) {
	noDB := errors.New("no database in this test")
	for _, c := range []struct {
		version, mode, zone, system, engine string
		want                                string // "" for a check that passes
	}{
		{"10.11.14-MariaDB", "STRICT_TRANS_TABLES", "+00:00", "UTC", "InnoDB", ""},
		{"8.0.36", "STRICT_ALL_TABLES", "SYSTEM", "UTC", "InnoDB", ""},
		{"5.7.44", "STRICT_TRANS_TABLES", "+00:00", "UTC", "InnoDB", "too old"},
		{"8.0.36", "", "+00:00", "UTC", "InnoDB", "not strict"},
		{"8.0.36", "STRICT_TRANS_TABLES", "SYSTEM", "CET", "InnoDB", "not UTC"},
		{"8.0.36", "STRICT_TRANS_TABLES", "+00:00", "UTC", "MyISAM", "InnoDB"},
	} {
		conn := sqlbackend.Funcs{
			AllFunc: func(ctx context.Context, q string, args ...any) ([][]any, error) {
				return [][]any{{c.version, []byte(c.mode), c.zone, c.system, c.engine}}, nil
			},
			TransactionFunc: func(context.Context, func(sqlbackend.Querier) error) error { return noDB },
		}
		b, err := mysqlbackend.New(conn, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Init(t.Context())
		switch {
		case c.want == "" && !errors.Is(err, noDB):
			t.Errorf("%+v: Init = %v, want the check to pass", c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !anarchon.IsPermanent(err)):
			t.Errorf("%+v: Init = %v, want a permanent error about %q", c, err, c.want)
		}
	}
}
