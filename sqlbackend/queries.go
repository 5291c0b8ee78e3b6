package sqlbackend

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
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
	// addJobsFence adds jobs.fence to a database made before it
	// (migrate, when SQLDialect.HasColumn finds none).
	addJobsFence string

	insertJob, selectJob, raiseWatermark, setFence string

	plainClaim, selectToken, heldSlots, heldSlotKey, insertManual string
	plainClaims, plainClaimKey                                    string
	leaseClaims, leaseClaimKey, takeFences, jobKey                string
	upsertResult, finishPlain                                     string
	trimResults, trimRuns                                         string

	// A batch of results in one statement per step (batch_sets.go),
	// with their {keys}.
	insertJobs, upsertResults, finishPlains, finishRuns          string
	trimResultsOf, trimResultsAged, trimRunsOf, trimRunsAged     string
	raiseWatermarks, resultKey, finishKey, agedKey, watermarkKey string

	historyRuns, historyResults       string
	historyRunsAll, historyResultsAll string

	selectRun, insertRun, renewRun, takeOverRun, abandonRun string
	insertStoreResult                                       string
	liveOtherRun                                            string
	earlierRuns, replaceRun                                 string
	heartbeat, finish, release, active                      string

	// Locking reads of what heartbeat, finish, release and trimRuns
	// change, for a dialect without RETURNING (SQLDialect.NoReturning).
	heartbeatRead, finishRead, releaseRead, trimRunsRead string

	// The instance registry (registry.go).
	registerInstance, pruneInstances, deregisterInstance, listInstances string

	// Job control and triggers (control.go).
	pausedResult, selectPaused, setPaused, jobState, jobStates                  string
	requestTrigger, selectTrigger, pendingTriggers, claimTrigger, finishTrigger string
	cancelTrigger                                                               string
	claimTriggerRead                                                            string // NoReturning's twin of claimTrigger

	now       string // SELECT of the server's clock (SQLDialect.NowMs)
	serialize string // SQLDialect.Serialize; "" if none
}

// pieceRE matches the dialect pieces that take an argument:
// {key 1024}, {ignore job, slot}, {upsert id}, {new col}.
var pieceRE = regexp.MustCompile(`\{(key|ignore|upsert|new) ([^{}]+)\}`)

// expandPieces replaces the pieces of pieceRE in s with d's SQL for them,
// or the standard SQL where d leaves them nil.
func expandPieces(s string, d SQLDialect) string {
	return pieceRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := pieceRE.FindStringSubmatch(m)
		arg := strings.TrimSpace(sub[2])
		switch sub[1] {
		case "key":
			n, err := strconv.Atoi(arg)
			if err != nil {
				panic("sqlbackend: bad piece " + m)
			}
			if d.KeyText == nil {
				return "TEXT"
			}
			return d.KeyText(n)
		case "ignore":
			if d.InsertIgnore == nil {
				return "ON CONFLICT (" + arg + ") DO NOTHING"
			}
			return d.InsertIgnore(arg)
		case "upsert":
			if d.Upsert == nil {
				return "ON CONFLICT (" + arg + ") DO UPDATE SET"
			}
			return d.Upsert(arg)
		default: // new
			if d.Excluded == nil {
				return "excluded." + arg
			}
			return d.Excluded(arg)
		}
	})
}

// or returns s, or def if s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// buildQueries fills in the table names and the dialect's pieces, and
// rewrites the placeholders of every statement once. quote quotes a bare
// name (an index's).
func buildQueries(qualify, quote func(string) string, d SQLDialect) queries {
	inlineIndex := ""
	if d.InlineIndexes {
		inlineIndex = ",\n\tINDEX " + quote("results_slot") + " (job, slot)"
	}
	r := strings.NewReplacer(
		"{jobs}", qualify("jobs"), "{runs}", qualify("runs"), "{results}", qualify("results"),
		"{instances}", qualify("instances"), "{control}", qualify("control"), "{triggers}", qualify("triggers"),
		"{big}", d.BigInt, "{now}", d.NowMs, "{fu}", d.ForUpdate,
		"{text}", or(d.Text, "TEXT"), "{tcast}", or(d.TextCast, "TEXT"), "{bcast}", or(d.BigIntCast, d.BigInt),
		"{results_slot}", quote("results_slot"), "{inline_index}", inlineIndex, "{runs_live}", quote("runs_live"),
	)
	rewrite := placeholders(d)
	used := 0
	// unrewritten builds a statement whose `?` the caller rewrites after
	// it has put more of them in (plainClaims's {keys}).
	unrewritten := func(name string) string {
		s, ok := statements[name]
		if !ok {
			panic("sqlbackend: no statement " + name + " in sql/*.sql")
		}
		used++
		return expandPieces(r.Replace(s), d)
	}
	q := func(name string) string {
		s, ok := statements[name]
		if !ok {
			panic("sqlbackend: no statement " + name + " in sql/*.sql")
		}
		used++
		s = expandPieces(r.Replace(s), d)
		if d.NoReturning {
			// The statement's last line is its RETURNING clause
			// (sql/*.sql keeps it there); its *Read twin runs instead.
			if i := strings.LastIndex(s, "\nRETURNING "); i >= 0 {
				s = s[:i]
			}
		}
		return rewrite(s)
	}
	defer func() {
		if used != len(statements) {
			panic(fmt.Sprintf("sqlbackend: sql/*.sql holds %d statements, buildQueries uses %d", len(statements), used))
		}
	}()
	ddl := []string{q("createJobs"), q("createRuns"), q("createResults"), q("createResultsSlot"), q("createInstances"), q("createControl"), q("createTriggers")}
	runsLive := q("createRunsLive")
	if d.InlineIndexes {
		ddl = slices.Delete(ddl, 3, 4)
	}
	if d.PartialIndexes {
		ddl = append(ddl, runsLive)
	}
	return queries{
		ddl:          ddl,
		addJobsFence: q("addJobsFence"),

		insertJob: q("insertJob"), selectJob: q("selectJob"), raiseWatermark: q("raiseWatermark"), setFence: q("setFence"),

		plainClaim: q("plainClaim"), selectToken: q("selectToken"), heldSlots: q("heldSlots"), insertManual: q("insertManual"),
		// One slot of heldSlots's {keys}, typed (PostgreSQL types an
		// untyped parameter as text); its `?` stay for the batch's own
		// rewrite of the whole statement.
		heldSlotKey: r.Replace("SELECT CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS slot"),
		plainClaims: unrewritten("plainClaims"),
		leaseClaims: unrewritten("leaseClaims"), takeFences: unrewritten("takeFences"),
		// One job of takeFences's, insertJobs's, trimResultsOf's and
		// trimRunsOf's {keys}.
		jobKey: r.Replace("SELECT CAST(? AS {tcast}) AS job"),
		leaseClaimKey: r.Replace("SELECT CAST(? AS {bcast}) AS ord, CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS slot, " +
			"CAST(? AS {tcast}) AS token, CAST(? AS {tcast}) AS inst, CAST(? AS {bcast}) AS lease, " +
			"CAST(? AS {bcast}) AS maxlate, CAST(? AS {bcast}) AS overlap, CAST(? AS {bcast}) AS lim"),
		// One claim of plainClaims's {keys}, typed as heldSlotKey.
		plainClaimKey: r.Replace("SELECT CAST(? AS {bcast}) AS ord, CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS slot, " +
			"CAST(? AS {tcast}) AS token, CAST(? AS {tcast}) AS inst, CAST(? AS {tcast}) AS ptok"),
		upsertResult: q("upsertResult"), finishPlain: q("finishPlain"),
		trimResults: q("trimResults"), trimRuns: q("trimRuns"),

		insertJobs: unrewritten("insertJobs"), upsertResults: unrewritten("upsertResults"),
		finishPlains: unrewritten("finishPlains"), finishRuns: unrewritten("finishRuns"),
		trimResultsOf: unrewritten("trimResultsOf"), trimResultsAged: unrewritten("trimResultsAged"),
		trimRunsOf: unrewritten("trimRunsOf"), trimRunsAged: unrewritten("trimRunsAged"),
		raiseWatermarks: unrewritten("raiseWatermarks"),
		// One result of upsertResults's and finishPlains's {keys}.
		resultKey: r.Replace("SELECT CAST(? AS {tcast}) AS job, CAST(? AS {tcast}) AS token, CAST(? AS {bcast}) AS slot, " +
			"CAST(? AS {tcast}) AS inst, CAST(? AS {bcast}) AS attempt, CAST(? AS {tcast}) AS status, " +
			"CAST(? AS {tcast}) AS ctok, CAST(? AS {bcast}) AS started, CAST(? AS {bcast}) AS finished, " +
			"CAST(? AS {tcast}) AS err, CAST(? AS {tcast}) AS output, CAST(? AS {bcast}) AS manual, CAST(? AS {bcast}) AS plain"),
		// One run of finishRuns's {keys}.
		finishKey: r.Replace("SELECT CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS slot, CAST(? AS {tcast}) AS token, CAST(? AS {tcast}) AS status"),
		// One job of trimResultsAged's and trimRunsAged's {keys}.
		agedKey: r.Replace("SELECT CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS ttl"),
		// One job of raiseWatermarks's {keys}.
		watermarkKey: r.Replace("SELECT CAST(? AS {tcast}) AS job, CAST(? AS {bcast}) AS top"),

		historyRuns: q("historyRuns"), historyRunsAll: q("historyRunsAll"),
		historyResults: q("historyResults"), historyResultsAll: q("historyResultsAll"),

		selectRun: q("selectRun"), insertRun: q("insertRun"), renewRun: q("renewRun"),
		takeOverRun: q("takeOverRun"), abandonRun: q("abandonRun"),
		insertStoreResult: q("insertStoreResult"), liveOtherRun: q("liveOtherRun"),
		earlierRuns: q("earlierRuns"), replaceRun: q("replaceRun"),
		heartbeat: q("heartbeat"), finish: q("finish"), release: q("release"), active: q("active"),

		heartbeatRead: q("heartbeatRead"), finishRead: q("finishRead"),
		releaseRead: q("releaseRead"), trimRunsRead: q("trimRunsRead"),

		registerInstance: q("registerInstance"), pruneInstances: q("pruneInstances"),
		deregisterInstance: q("deregisterInstance"), listInstances: q("listInstances"),

		pausedResult: q("pausedResult"), selectPaused: q("selectPaused"), setPaused: q("setPaused"),
		jobState: q("jobState"), jobStates: q("jobStates"),
		requestTrigger: q("requestTrigger"), selectTrigger: q("selectTrigger"), pendingTriggers: q("pendingTriggers"),
		claimTrigger: q("claimTrigger"), claimTriggerRead: q("claimTriggerRead"), finishTrigger: q("finishTrigger"),
		cancelTrigger: q("cancelTrigger"),

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
