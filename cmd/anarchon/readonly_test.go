package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anarchon/anarchon/sqlitebackend"
	"github.com/anarchon/anarchon/sqlitefile"
	"github.com/go-sql-driver/mysql"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	goredis "github.com/redis/go-redis/v9"
)

// history and status on a store without anarchon's data (a mistyped
// schema, database, prefix or bucket, an empty SQLite file) fail with an
// error that says so (code no_anarchon_data), and leave the store as it
// was: asked again, they fail the same way, and on Redis no key of the
// prefix and on NATS neither the bucket nor a new stream exists. run-now
// then creates the store, and history reads it. An SQLite file (empty, or
// another program's database) stays byte for byte as it was, its journal
// mode included. SQLite always runs;
// PostgreSQL, MySQL, Redis and NATS with their variables.
func TestReadOnlyCreatesNoTables(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Another program's database, in SQLite's default journal mode
	// (DELETE), with one table.
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open(sqlitefile.DriverName, "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	stores := map[string]string{"sqlite": "sqlite:" + empty, "sqlite-foreign": "sqlite:" + foreign}
	files := map[string]string{"sqlite": empty, "sqlite-foreign": foreign}
	prefix := "ro" + randSuffix() + "_"
	if u := os.Getenv("ANARCHON_TEST_POSTGRES_URL"); u != "" {
		schema := "anarchon_ro_" + randSuffix()
		stores["postgres"] = withQuery(t, u, "schema", schema)
		t.Cleanup(func() { dropAll(t, u, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
	} else {
		stores["postgres"] = ""
	}
	if dsn := os.Getenv("ANARCHON_TEST_MYSQL_DSN"); dsn != "" {
		stores["mysql"] = mysqlURL(t, dsn) + "?prefix=" + prefix
		t.Cleanup(func() {
			for _, table := range []string{"jobs", "runs", "results", "instances", "control", "triggers"} {
				dropAll(t, mysqlURL(t, dsn), "DROP TABLE IF EXISTS `"+prefix+table+"`")
			}
		})
	} else {
		stores["mysql"] = ""
	}
	// Redis and NATS: what a read may not create, listed after each
	// round of reads.
	created := map[string]func(t *testing.T) []string{}
	if addr := os.Getenv("ANARCHON_TEST_REDIS_ADDR"); addr != "" {
		p := "ro" + randSuffix()
		stores["redis"] = "redis://" + addr + "/0?prefix=" + p
		rc := goredis.NewClient(&goredis.Options{Addr: addr})
		created["redis"] = func(t *testing.T) []string {
			keys, err := rc.Keys(context.Background(), "*"+p+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			return keys
		}
		t.Cleanup(func() {
			if keys, err := rc.Keys(context.Background(), "*"+p+"*").Result(); err == nil && len(keys) > 0 {
				rc.Del(context.Background(), keys...)
			}
			rc.Close()
		})
	} else {
		stores["redis"] = ""
	}
	if u := os.Getenv("ANARCHON_TEST_NATS_URL"); u != "" {
		bucket := "ro" + randSuffix()
		stores["nats"] = u + "?prefix=" + bucket
		nc, err := nats.Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		streams := func(t *testing.T) map[string]bool {
			have := map[string]bool{}
			l := js.StreamNames(context.Background())
			for n := range l.Name() {
				have[n] = true
			}
			if l.Err() != nil {
				t.Fatal(l.Err())
			}
			return have
		}
		before := streams(t)
		created["nats"] = func(t *testing.T) []string {
			var made []string
			for n := range streams(t) {
				if !before[n] {
					made = append(made, "stream "+n)
				}
			}
			return made
		}
		t.Cleanup(func() {
			_ = js.DeleteKeyValue(context.Background(), bucket)
			nc.Close()
		})
	} else {
		stores["nats"] = ""
	}
	ct := writeFile(t, dir, "crontab", "# name: ro\n@daily echo hi\n")
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			if store == "" {
				env := map[string]string{"postgres": "ANARCHON_TEST_POSTGRES_URL", "mysql": "ANARCHON_TEST_MYSQL_DSN",
					"redis": "ANARCHON_TEST_REDIS_ADDR", "nats": "ANARCHON_TEST_NATS_URL"}[name]
				msg := env + " is not set: start a server with scripts/services/" + name + ".sh and export its output"
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			want := "no anarchon tables there"
			if created[name] != nil {
				want = "no anarchon data there"
			}
			var before []byte
			if files[name] != "" {
				if before, err = os.ReadFile(files[name]); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				for _, args := range [][]string{
					{"history", "ro", "--store", store}, {"status", "--store", store},
					{"status", "--crontab", ct, "--store", store}, {"history", "ro", "--crontab", ct, "--store", store},
				} {
					code, _, errOut := cli(t, args...)
					if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, string(StoreNoData)) {
						t.Fatalf("%s on a store without anarchon data: exit %d %q", strings.Join(args[:len(args)-1], " "), code, errOut)
					}
				}
				if created[name] != nil {
					if made := created[name](t); len(made) > 0 {
						t.Fatalf("read-only commands created %q", made)
					}
				}
				if files[name] != "" {
					after, err := os.ReadFile(files[name])
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(after, before) {
						t.Fatalf("read-only commands changed %s: %d bytes before, %d after", files[name], len(before), len(after))
					}
					for _, side := range []string{"-wal", "-shm", "-journal", sqlitebackend.LockFileSuffix} {
						if _, err := os.Stat(files[name] + side); err == nil {
							t.Fatalf("read-only commands created %s%s", files[name], side)
						}
					}
				}
			}
			if code, out, errOut := cli(t, "run-now", "ro", "--crontab", ct, "--store", store); code != 0 {
				t.Fatalf("run-now: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := cli(t, "history", "ro", "--store", store); code != 0 || !strings.Contains(out, "success") {
				t.Fatalf("history after run-now: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// withQuery returns raw with the query parameter key set to val.
func withQuery(t *testing.T, raw, key, val string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, val)
	u.RawQuery = q.Encode()
	return u.String()
}

// mysqlURL turns a go-sql-driver DSN into the daemon's mysql:// URL.
func mysqlURL(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return "mysql://" + cfg.User + ":" + cfg.Passwd + "@" + cfg.Addr + "/" + cfg.DBName
}

// dropAll runs a clean-up statement on the SQL store at raw.
func dropAll(t *testing.T, raw, stmt string) {
	b, err := openStore(raw)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	ctx := context.Background()
	defer b.Close(ctx)
	if _, err := b.(sqlStore).Conn().All(ctx, stmt); err != nil {
		t.Errorf("cleanup: %s: %v", stmt, err)
	}
}

// A mistyped PostgreSQL database (SQLSTATE 3D000 at connect) is
// no_anarchon_data for the read-only commands, which create nothing, and
// a coded open error for "run", which creates tables, not databases; the
// password is in neither.
func TestPostgresMissingDatabase(t *testing.T) {
	base := os.Getenv("ANARCHON_TEST_POSTGRES_URL")
	if base == "" {
		msg := "ANARCHON_TEST_POSTGRES_URL is not set: start a server with `bash scripts/services/postgres.sh DIR` and export its output"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("ANARCHON_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/anarchon_no_such_db_3d000"
	store := u.String()
	pw, _ := u.User.Password()
	for _, args := range [][]string{{"history", "x", "--store", store}, {"status", "--store", store}} {
		code, _, errOut := cli(t, args...)
		if code != 1 || !strings.Contains(errOut, string(StoreNoData)) || !strings.Contains(errOut, "no such database") {
			t.Errorf("%s: exit %d %q", args[0], code, errOut)
		}
		if pw != "" && strings.Contains(errOut, ":"+pw+"@") {
			t.Errorf("%s: the password in %q", args[0], errOut)
		}
	}
	ct := writeFile(t, t.TempDir(), "crontab", "# name: x\n@daily echo hi\n")
	code, _, errOut := cli(t, "run", "--crontab", ct, "--store", store)
	if code != 1 || !strings.Contains(errOut, string(StoreOpenFailed)) || !strings.Contains(errOut, "3D000") {
		t.Errorf("run: exit %d %q", code, errOut)
	}
}

// run-now prints its record as history then prints it: the same claim,
// start and end times, to the millisecond, by the store's clock.
func TestRunNowMatchesHistory(t *testing.T) {
	dir := t.TempDir()
	ct := writeFile(t, dir, "crontab", "# name: rn\n0 0 1 1 * true\n")
	store := "sqlite:" + filepath.Join(dir, "s.db")
	for range 3 {
		code, out, errOut := cli(t, "run-now", "rn", "--json", "--crontab", ct, "--store", store)
		if code != 0 {
			t.Fatalf("run-now: exit %d\n%s%s", code, out, errOut)
		}
		var ran map[string]any
		if err := json.Unmarshal([]byte(out), &ran); err != nil {
			t.Fatalf("run-now --json: %v\n%s", err, out)
		}
		code, out, errOut = cli(t, "history", "rn", "--json", "-n", "1", "--store", store)
		if code != 0 {
			t.Fatalf("history: exit %d\n%s%s", code, out, errOut)
		}
		var recs []map[string]any
		if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
			t.Fatalf("history --json: %v\n%s", err, out)
		}
		for _, k := range []string{"slot", "claimed_at", "started_at", "finished_at"} {
			if ran[k] == nil || fmt.Sprint(ran[k]) != fmt.Sprint(recs[0][k]) {
				t.Errorf("%s: run-now printed %v, history %v", k, ran[k], recs[0][k])
			}
		}
	}
}
