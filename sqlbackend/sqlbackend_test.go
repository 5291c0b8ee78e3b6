package sqlbackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/anarchon/anarchon"
)

func TestDollar(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT ?", "SELECT $1"},
		{"a = ? AND b = ?", "a = $1 AND b = $2"},
		{"x = '?' AND y = ?", "x = '?' AND y = $1"},
		{`"we?ird" = ? -- what?` + "\n" + "AND z = ?", `"we?ird" = $1 -- what?` + "\n" + "AND z = $2"},
		{"'unterminated ?", "'unterminated ?"},
	}
	for _, c := range cases {
		if got := Dollar(c.in); got != c.want {
			t.Errorf("Dollar(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func noConn() Conn {
	fail := errors.New("no database in this test")
	return Funcs{
		AllFunc: func(context.Context, string, ...any) ([][]any, error) { return nil, fail },
		TransactionFunc: func(context.Context, func(Querier) error) error {
			return fail
		},
	}
}

func TestNewValidates(t *testing.T) {
	d := SQLDialect{BigInt: "BIGINT", NowMs: "0"}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no conn", Config{Dialect: d}, "Conn is nil"},
		{"no dialect", Config{Conn: noConn()}, "BigInt and NowMs"},
		{"bad prefix", Config{Conn: noConn(), Dialect: d, Prefix: `x"; DROP`}, "prefix"},
		{"bad schema", Config{Conn: noConn(), Dialect: d, Schema: "a.b"}, "schema"},
		{"long prefix", Config{Conn: noConn(), Dialect: d, Prefix: strings.Repeat("p", 41)}, "prefix"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	b, err := New(Config{Conn: noConn(), Dialect: d, Schema: "s", Prefix: "p_"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Qualify("runs"); got != `"s"."p_runs"` {
		t.Errorf("Qualify = %s", got)
	}
	if b.DedupeWindow() != anarchon.Forever {
		t.Error("DedupeWindow is not Forever")
	}
}

func TestErrorsWrapped(t *testing.T) {
	b, err := New(Config{Name: "x", Conn: noConn(), Dialect: SQLDialect{BigInt: "BIGINT", NowMs: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Init(ctx); err == nil || !strings.HasPrefix(err.Error(), "x: migrate: ") {
		t.Fatalf("Init = %v", err)
	}
	if _, err := b.Claim(ctx, anarchon.ClaimInput{Job: "", Token: "t"}); err == nil {
		t.Fatal("Claim with no database succeeded")
	}
	b.Close(ctx)
	if _, err := b.Claim(ctx, anarchon.ClaimInput{Job: "j", Token: "t"}); !errors.Is(err, anarchon.ErrClosed) {
		t.Fatalf("Claim after Close = %v, want ErrClosed", err)
	}
	if _, err := b.Runs().Claim(ctx, anarchon.RunClaim{}); !errors.Is(err, anarchon.ErrClosed) {
		t.Fatalf("lease Claim after Close = %v, want ErrClosed", err)
	}
}

func TestConvert(t *testing.T) {
	for _, v := range []any{int64(7), int32(7), 7, uint32(7), float64(7), []byte("7"), "7"} {
		if n, err := asInt64(v); err != nil || n != 7 {
			t.Errorf("asInt64(%T) = %d, %v", v, n, err)
		}
	}
	if _, err := asInt64(struct{}{}); err == nil {
		t.Error("asInt64(struct{}) did not fail")
	}
	if s, err := asString([]byte("x")); err != nil || s != "x" {
		t.Errorf("asString = %q, %v", s, err)
	}
}

func TestCheckJob(t *testing.T) {
	b, err := New(Config{Conn: noConn(), Dialect: SQLDialect{BigInt: "BIGINT", NowMs: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	var _ anarchon.JobChecker = b
	for _, bad := range []string{"", "a\x00b", strings.Repeat("x", MaxJobName+1)} {
		if b.CheckJob(anarchon.JobLimits{Job: bad}) == nil {
			t.Errorf("CheckJob(%q…) accepted", bad[:min(len(bad), 8)])
		}
	}
	if err := b.CheckJob(anarchon.JobLimits{Job: `it's "ok" ✓`}); err != nil {
		t.Error(err)
	}
}

func TestRowReader(t *testing.T) {
	rd := reader([]any{int64(7), []byte("x"), nil, nil, true, "12"})
	n, s := rd.int64(), rd.string()
	nv, ok := rd.nullInt64()
	empty, b, m := rd.string(), rd.bool(), rd.int64()
	if err := rd.Err(); err != nil || n != 7 || s != "x" || ok || nv != 0 || empty != "" || !b || m != 12 {
		t.Errorf("reader: %d %q %d,%v %q %v %d, err %v", n, s, nv, ok, empty, b, m, rd.Err())
	}
	// The first error sticks; later reads return zero values.
	rd = reader([]any{"x", struct{}{}, int64(1)})
	_ = rd.string()
	if got := rd.int64(); got != 0 {
		t.Errorf("int64 of a struct = %d", got)
	}
	if got := rd.int64(); got != 0 {
		t.Errorf("int64 after an error = %d, want 0", got)
	}
	if err := rd.Err(); err == nil || !strings.Contains(err.Error(), "column 2") {
		t.Errorf("Err = %v, want one naming column 2", err)
	}
	rd = reader([]any{int64(1)})
	rd.int64()
	rd.string()
	if rd.Err() == nil {
		t.Error("reading past the row's end did not fail")
	}
}

func TestParseStatements(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"unnamed", "SELECT 1\n", "without a name"},
		{"twice", "-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n", "named twice"},
		{"empty", "-- name: a\n-- only a comment\n-- name: b\nSELECT 1\n", "is empty"},
	} {
		_, err := parseStatements(fstest.MapFS{"sql/x.sql": {Data: []byte(tc.file)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	got, err := parseStatements(fstest.MapFS{"sql/x.sql": {Data: []byte("-- file comment\n\n-- name: a\n-- why\nSELECT ?\n  FROM t\n")}})
	if err != nil || got["a"] != "SELECT ?\n  FROM t" {
		t.Errorf("parseStatements = %q, %v", got, err)
	}
	// buildQueries panics on a statement of sql/*.sql it does not use,
	// or one it needs and does not find.
	q := buildQueries(func(s string) string { return s }, func(s string) string { return s }, SQLDialect{BigInt: "BIGINT", NowMs: "0"})
	if q.active == "" || len(q.ddl) != 7 {
		t.Errorf("buildQueries: active %q, %d DDL statements", q.active, len(q.ddl))
	}
}

// TestDialectPieces builds every statement with a dialect that sets every
// optional piece, and checks that none of the standard SQL they replace is
// left; and with the zero pieces, that the standard SQL is there.
func TestDialectPieces(t *testing.T) {
	quote := func(s string) string { return "`" + s + "`" }
	d := SQLDialect{
		BigInt: "BIGINT", NowMs: "NOW_MS()", ForUpdate: " FOR UPDATE",
		KeyText:      func(n int) string { return "VARBINARY(" + strconv.Itoa(n) + ")" },
		Text:         "LONGBLOB",
		TextCast:     "BINARY",
		BigIntCast:   "SIGNED",
		Quote:        quote,
		InsertIgnore: func(key string) string { return "ON DUPLICATE KEY UPDATE " + key },
		Upsert:       func(string) string { return "ON DUPLICATE KEY UPDATE" },
		Excluded:     func(col string) string { return "VALUES(" + col + ")" },
		NoReturning:  true, InlineIndexes: true,
	}
	q := buildQueries(quote, quote, d)
	all := append([]string{q.plainClaim, q.insertJob, q.insertManual, q.insertStoreResult, q.upsertResult,
		q.registerInstance, q.heartbeat, q.finish, q.release, q.trimRuns, q.trimResults,
		q.pausedResult, q.setPaused, q.requestTrigger, q.claimTrigger, q.finishTrigger}, q.ddl...)
	for _, s := range all {
		for _, bad := range []string{"ON CONFLICT", "RETURNING", "excluded.", " TEXT", "AS TEXT", "{", `"`, "||"} {
			if strings.Contains(s, bad) {
				t.Errorf("%q left in %s", bad, s)
			}
		}
	}
	if len(q.ddl) != 6 || !strings.Contains(q.ddl[2], "INDEX `results_slot` (job, slot)") {
		t.Errorf("inline index: %d DDL statements, results: %s", len(q.ddl), q.ddl[2])
	}
	if !strings.Contains(q.heartbeatRead, "FOR UPDATE") || !strings.Contains(q.trimRunsRead, "FOR UPDATE") ||
		!strings.Contains(q.claimTriggerRead, "FOR UPDATE") {
		t.Errorf("read twins without the row lock: %s / %s / %s", q.heartbeatRead, q.trimRunsRead, q.claimTriggerRead)
	}
	std := buildQueries(func(s string) string { return `"` + s + `"` }, func(s string) string { return `"` + s + `"` }, SQLDialect{BigInt: "BIGINT", NowMs: "0"})
	for _, c := range []struct{ s, want string }{
		{std.plainClaim, "ON CONFLICT (job, slot) DO NOTHING\nRETURNING token"},
		{std.upsertResult, "ON CONFLICT (job, token) DO UPDATE SET slot = excluded.slot"},
		{std.heartbeat, "\nRETURNING lease_until"},
		{std.plainClaim, "CASE WHEN p.paused = 1 THEN CAST(? AS TEXT) ELSE CAST(? AS TEXT) END"},
		{std.setPaused, "ON CONFLICT (job) DO UPDATE SET paused = excluded.paused"},
		{std.claimTrigger, "\nRETURNING token"},
		{std.requestTrigger, "ON CONFLICT (job, tkey) DO NOTHING"},
		{std.ddl[5], "job TEXT NOT NULL PRIMARY KEY"},
		{std.ddl[6], "tkey TEXT NOT NULL"},
		{std.ddl[0], "job TEXT NOT NULL PRIMARY KEY"},
		{std.ddl[3], `CREATE INDEX IF NOT EXISTS "results_slot"`},
	} {
		if !strings.Contains(c.s, c.want) {
			t.Errorf("%q missing in %s", c.want, c.s)
		}
	}
	// The partial index on live leases comes only with PartialIndexes,
	// after the tables.
	if len(std.ddl) != 7 {
		t.Errorf("without PartialIndexes: %d DDL statements, want 7", len(std.ddl))
	}
	partial := buildQueries(func(s string) string { return `"` + s + `"` }, func(s string) string { return `"p_` + s + `"` },
		SQLDialect{BigInt: "BIGINT", NowMs: "0", PartialIndexes: true})
	want := `CREATE INDEX IF NOT EXISTS "p_runs_live" ON "runs" (job) WHERE state = 'running' AND lease_until IS NOT NULL`
	if len(partial.ddl) != 8 || partial.ddl[7] != want {
		t.Errorf("with PartialIndexes: %d DDL statements, the last %q; want 8, the last %q", len(partial.ddl), partial.ddl[len(partial.ddl)-1], want)
	}
}

// Config.InitError rewrites Init's errors whether Init is called or runs
// lazily, on the first call before it (SQLite adds the file system's
// reason there).
func TestInitErrorHook(t *testing.T) {
	b, err := New(Config{Name: "x", Conn: noConn(), Dialect: SQLDialect{BigInt: "BIGINT", NowMs: "0"},
		InitError: func(err error) error { return fmt.Errorf("reason; %w", err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := b.History(ctx, "j", 1); err == nil || !strings.HasPrefix(err.Error(), "reason; x: migrate: ") {
		t.Fatalf("History before Init = %v, want the hook's rewrite", err)
	}
	if err := b.Init(ctx); err == nil || !strings.HasPrefix(err.Error(), "reason; x: migrate: ") {
		t.Fatalf("Init = %v, want the hook's rewrite", err)
	}
}
