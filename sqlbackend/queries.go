package sqlbackend

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// The statements live in sql/*.sql, each under a "-- name: <name>" line.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statements is every statement of sql/*.sql by name, with its comment
// lines dropped, read once.
var statements = mustParseStatements(sqlFiles)

// queries holds every statement, built once per backend from the table
// names and the dialect, with placeholders already in the database's
// syntax (SQLDialect.Placeholders). Values are always bound.
type queries struct {
	ddl []string

	insertJob, selectJob, raiseWatermark string

	plainClaim, selectToken, insertManual string
	upsertResult, finishPlain             string
	trimResults, trimRuns                 string

	historyRuns, historyResults       string
	historyRunsAll, historyResultsAll string

	selectRun, insertRun, renewRun, takeOverRun, abandonRun string
	insertStoreResult                                       string
	liveOtherRun                                            string
	heartbeat, finish, release, active                      string

	// The instance registry (registry.go).
	registerInstance, pruneInstances, deregisterInstance, listInstances string

	// Job control and triggers (control.go).
	pausedResult, selectPaused, setPaused, jobState, jobStates                  string
	requestTrigger, selectTrigger, pendingTriggers, claimTrigger, finishTrigger string

	now       string // SELECT of the server's clock (SQLDialect.NowMs)
	serialize string // SQLDialect.Serialize; "" if none
}

// buildQueries fills in the table names and the dialect's pieces, and
// rewrites the placeholders of every statement once.
func buildQueries(qualify func(string) string, d SQLDialect) queries {
	r := strings.NewReplacer(
		"{jobs}", qualify("jobs"), "{runs}", qualify("runs"), "{results}", qualify("results"),
		"{instances}", qualify("instances"), "{control}", qualify("control"), "{triggers}", qualify("triggers"),
		"{big}", d.BigInt, "{now}", d.NowMs, "{fu}", d.ForUpdate,
		"{results_slot}", qualifyIndex(qualify, "results_slot"),
	)
	rewrite := placeholders(d)
	used := 0
	q := func(name string) string {
		s, ok := statements[name]
		if !ok {
			panic("sqlbackend: no statement " + name + " in sql/*.sql")
		}
		used++
		return rewrite(r.Replace(s))
	}
	defer func() {
		if used != len(statements) {
			panic(fmt.Sprintf("sqlbackend: sql/*.sql holds %d statements, buildQueries uses %d", len(statements), used))
		}
	}()
	return queries{
		ddl: []string{q("createJobs"), q("createRuns"), q("createResults"), q("createResultsSlot"), q("createInstances"), q("createControl"), q("createTriggers")},

		insertJob: q("insertJob"), selectJob: q("selectJob"), raiseWatermark: q("raiseWatermark"),

		plainClaim: q("plainClaim"), selectToken: q("selectToken"), insertManual: q("insertManual"),
		upsertResult: q("upsertResult"), finishPlain: q("finishPlain"),
		trimResults: q("trimResults"), trimRuns: q("trimRuns"),

		historyRuns: q("historyRuns"), historyRunsAll: q("historyRunsAll"),
		historyResults: q("historyResults"), historyResultsAll: q("historyResultsAll"),

		selectRun: q("selectRun"), insertRun: q("insertRun"), renewRun: q("renewRun"),
		takeOverRun: q("takeOverRun"), abandonRun: q("abandonRun"),
		insertStoreResult: q("insertStoreResult"), liveOtherRun: q("liveOtherRun"),
		heartbeat: q("heartbeat"), finish: q("finish"), release: q("release"), active: q("active"),

		registerInstance: q("registerInstance"), pruneInstances: q("pruneInstances"),
		deregisterInstance: q("deregisterInstance"), listInstances: q("listInstances"),

		pausedResult: q("pausedResult"), selectPaused: q("selectPaused"), setPaused: q("setPaused"),
		jobState: q("jobState"), jobStates: q("jobStates"),
		requestTrigger: q("requestTrigger"), selectTrigger: q("selectTrigger"), pendingTriggers: q("pendingTriggers"),
		claimTrigger: q("claimTrigger"), finishTrigger: q("finishTrigger"),

		now:       rewrite("SELECT " + d.NowMs),
		serialize: rewrite(d.Serialize),
	}
}

// placeholders returns d.Placeholders, or the identity if it is nil.
func placeholders(d SQLDialect) func(string) string {
	if d.Placeholders == nil {
		return func(s string) string { return s }
	}
	return d.Placeholders
}

// parseStatements reads every *.sql file of fsys: a line "-- name: X"
// starts statement X, other lines that begin with "--" are comments and
// dropped, and a statement's text is its remaining lines, trimmed. A name
// given twice, or text before the first name, is an error.
func parseStatements(fsys fs.FS) (map[string]string, error) {
	files, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	out := map[string]string{}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		var name string
		var body []string
		flush := func() error {
			text := strings.TrimSpace(strings.Join(body, "\n"))
			body = body[:0]
			if name == "" {
				if text != "" {
					return fmt.Errorf("%s: statement without a name: %.40q", f, text)
				}
				return nil
			}
			if _, dup := out[name]; dup {
				return fmt.Errorf("%s: statement %s named twice", f, name)
			}
			if text == "" {
				return fmt.Errorf("%s: statement %s is empty", f, name)
			}
			out[name] = text
			return nil
		}
		for line := range strings.Lines(string(data)) {
			trimmed := strings.TrimSpace(line)
			if n, ok := strings.CutPrefix(trimmed, "-- name:"); ok {
				if err := flush(); err != nil {
					return nil, err
				}
				name = strings.TrimSpace(n)
				continue
			}
			if strings.HasPrefix(trimmed, "--") {
				continue
			}
			body = append(body, strings.TrimRight(line, "\r\n"))
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mustParseStatements(fsys fs.FS) map[string]string {
	m, err := parseStatements(fsys)
	if err != nil {
		panic("sqlbackend: " + err.Error())
	}
	return m
}

// qualifyIndex names an index after its table prefix. An index lives in
// its table's schema, and CREATE INDEX takes an unqualified name on
// PostgreSQL, so only the last part of the qualified name is kept.
func qualifyIndex(qualify func(string) string, name string) string {
	full := qualify(name)
	if i := strings.LastIndex(full, `."`); i >= 0 {
		return full[i+1:]
	}
	return full
}
