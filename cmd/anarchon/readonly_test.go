package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// history and status on an SQL store without anarchon's tables (a
// mistyped schema, database or prefix, an empty SQLite file) fail with an
// error that says so, and leave the store as it was: asked again, they
// fail the same way. run-now then creates the tables, and history reads
// them. SQLite always runs; PostgreSQL and MySQL with their variables.
func TestReadOnlyCreatesNoTables(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stores := map[string]string{"sqlite": "sqlite:" + empty}
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
	ct := writeFile(t, dir, "crontab", "# name: ro\n@daily echo hi\n")
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			if store == "" {
				env := map[string]string{"postgres": "ANARCHON_TEST_POSTGRES_URL", "mysql": "ANARCHON_TEST_MYSQL_DSN"}[name]
				msg := env + " is not set: start a server with scripts/services/" + name + ".sh and export its output"
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			for range 2 {
				for _, args := range [][]string{{"history", "ro", "--store", store}, {"status", "--store", store}} {
					code, _, errOut := cli(t, args...)
					if code != 1 || !strings.Contains(errOut, "no anarchon tables there") {
						t.Fatalf("%s on a store without tables: exit %d %q", args[0], code, errOut)
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
