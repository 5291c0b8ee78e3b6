package pgbackend

import (
	"embed"
	"strconv"
	"strings"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/sqlbackend"
)

// routineVersion ends the name of every stored function, so that two
// versions of anarchon sharing a database in a rolling deploy each call
// the body they were built with. A change of any body takes a new version.
const routineVersion = "_v10"

// The bodies of the stored functions, one CREATE per file, after a
// comment header that is dropped.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// routineNames are the stored functions in the order Init creates them:
// lock_job and trim_history first, which the others call.
var routineNames = []string{"lock_job", "trim_history", "claim", "finish", "release", "finish_result",
	"claim_batch", "claim_runs", "save_result", "save_results", "finish_results"}

// routineFiles are the bodies of routineNames, in that order.
var routineFiles = func() []struct{ name, body string } {
	var out []struct{ name, body string }
	for _, name := range routineNames {
		data, err := sqlFiles.ReadFile("sql/" + name + ".sql")
		if err != nil {
			panic("pgbackend: " + err.Error())
		}
		body := string(data)
		for strings.HasPrefix(body, "--") { // the header
			_, body, _ = strings.Cut(body, "\n")
		}
		out = append(out, struct{ name, body string }{name, strings.TrimRight(body, "\n")})
	}
	return out
}()

// ifAbsent wraps the CREATE of function fn (a qualified name) so that it
// runs only if no function of that name exists. A body never changes
// under one name (see routineVersion), and a role that does not own an
// existing function could not replace it: creating only what is missing
// lets instances running as different roles share the functions.
func ifAbsent(fn, create string) string {
	return "DO $create$ BEGIN IF to_regproc('" + fn + "') IS NULL THEN EXECUTE $body$" + create +
		"$body$; END IF; END $create$"
}

// routines returns the PL/pgSQL functions that make the lease claim,
// Finish, Release and FinishResult one statement each (one round trip),
// and the statements that call them. channel is the NOTIFY channel, ""
// for none. The functions decide exactly as sqlbackend's transactions do:
// the job row is locked first (FOR UPDATE; a missing row is created under
// the job's advisory lock), then the run row, and the clock
// (clock_timestamp()) is read after the locks. A PL/pgSQL function that
// is VOLATILE takes a new snapshot for each statement under READ
// COMMITTED, so what it reads after waiting for a lock is what the
// previous holder committed. NOTIFY is sent inside the same implicit
// transaction, so a watcher hears of a change only once it is committed.
func routines(channel string) func(qualify func(string) string) sqlbackend.Routines {
	return func(qualify func(string) string) sqlbackend.Routines {
		lockJob := qualify("lock_job" + routineVersion)
		claim := qualify("claim" + routineVersion)
		finish := qualify("finish" + routineVersion)
		release := qualify("release" + routineVersion)
		finishResult := qualify("finish_result" + routineVersion)
		claimBatch := qualify("claim_batch" + routineVersion)
		claimRuns := qualify("claim_runs" + routineVersion)
		saveResult := qualify("save_result" + routineVersion)
		saveResults := qualify("save_results" + routineVersion)
		finishResults := qualify("finish_results" + routineVersion)
		trimHistory := qualify("trim_history" + routineVersion)
		ch := "NULL::text"
		if channel != "" {
			// channel is made of the validated schema and prefix
			// ([A-Za-z0-9_.]), so it is safe as a literal.
			ch = "'" + channel + "'"
		}
		r := strings.NewReplacer(
			"{jobs}", qualify("jobs"), "{runs}", qualify("runs"), "{results}", qualify("results"),
			"{control}", qualify("control"), "{now}", Dialect.NowMs, "{class}", strconv.Itoa(lockClass),
			"{early}", strconv.FormatInt(anarchon.EarlyTolerance.Milliseconds(), 10),
			"{lock_job}", lockJob, "{claim}", claim, "{finish}", finish,
			"{release}", release, "{finish_result}", finishResult,
			"{claim_batch}", claimBatch, "{claim_runs}", claimRuns,
			"{save_result}", saveResult, "{save_results}", saveResults, "{finish_results}", finishResults,
			"{trim_history}", trimHistory,
			"{released}", strconv.Itoa(int(anarchon.RunReleased)),
			"{finished}", strconv.Itoa(int(anarchon.RunFinished)),
		)
		q := r.Replace
		ddl := make([]string, len(routineFiles))
		for i, f := range routineFiles {
			ddl[i] = ifAbsent(qualify(f.name+routineVersion), q(f.body))
		}
		return sqlbackend.Routines{
			DDL:           ddl,
			Claim:         q(`SELECT o_kind, o_attempt, o_holder, o_until, o_status, o_fence FROM {claim}(?, ?, ?, ?, ?, ?, ?, ?, ?, ` + ch + `)`),
			Finish:        q(`SELECT o_ok FROM {finish}(?, ?, ?, ?, ` + ch + `)`),
			Release:       q(`SELECT o_ok FROM {release}(?, ?, ?, ` + ch + `)`),
			FinishResult:  q(`SELECT o_ok FROM {finish_result}(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + ch + `)`),
			ClaimBatch:    q(`SELECT o_idx, o_kind, o_now FROM {claim_batch}(CAST(? AS jsonb))`),
			ClaimRuns:     q(`SELECT o_idx, o_kind, o_attempt, o_holder, o_until, o_status, o_fence FROM {claim_runs}(CAST(? AS jsonb), ` + ch + `)`),
			SaveResult:    q(`SELECT o_ok FROM {save_result}(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			Heartbeats:    q(heartbeats),
			SaveResults:   q(`SELECT o_n FROM {save_results}(CAST(? AS jsonb))`),
			FinishResults: q(`SELECT o_idx, o_ok FROM {finish_results}(CAST(? AS jsonb), ` + ch + `)`),
		}
	}
}

// heartbeats renews a batch of leases (sqlbackend.Routines.Heartbeats)
// in one statement, as the base's heartbeat statement does for each: a
// run the token holds, running with a lease, gets the server's now plus
// its lease. The runs are locked first, in the order of (job, slot) (job
// by bytes, as Go orders the claims of a batch), so that two batches
// that share runs never wait for each other in a cycle; a run that
// changed while the statement waited for its lock is judged again as it
// is now, as a single UPDATE would.
const heartbeats = `WITH i AS (
	SELECT x.j, x.s, x.t, x.l FROM jsonb_to_recordset(CAST(? AS jsonb)) AS x(j text, s bigint, t text, l bigint)
), k AS (
	SELECT r.job, r.slot FROM {runs} r JOIN i ON r.job = i.j AND r.slot = i.s AND r.token = i.t
	WHERE r.state = 'running' AND r.lease_until IS NOT NULL
	ORDER BY r.job COLLATE "C", r.slot FOR UPDATE OF r
)
UPDATE {runs} r SET lease_until = {now} + i.l FROM i, k
WHERE r.job = k.job AND r.slot = k.slot AND r.job = i.j AND r.slot = i.s AND r.token = i.t
	AND r.state = 'running' AND r.lease_until IS NOT NULL
RETURNING r.job, r.slot, r.token`
