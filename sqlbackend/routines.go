package sqlbackend

// Routines are server-side routines (stored functions) that do a whole
// lease operation in one statement, so that it costs one round trip to the
// server instead of a transaction of several. A database that has them
// (PostgreSQL's PL/pgSQL) returns them from [Config.Routines]; each empty
// statement falls back to the base's own transaction. Every routine must
// decide exactly as the base's transaction does: lock the job row, then
// the run row, read the server's clock after the locks, and send the
// change notification (Config.Notify) in the same transaction.
//
// Statements are written with `?` placeholders and rewritten by
// SQLDialect.Placeholders like every other statement.
type Routines struct {
	// DDL creates the routines. Init runs it after the tables and
	// SQLDialect.ExtraTables, in the same migration transaction (after
	// SQLDialect.Serialize, so that two instances never replace a routine
	// at once). It must be idempotent (CREATE OR REPLACE). A routine's
	// name should carry a version, so that two versions of anarchon that
	// share a database during a rolling deploy each call their own.
	DDL []string

	// Claim decides a lease claim (SPEC §6). Arguments: job (text), slot
	// (ms), token, instance, lease (ms, > 0), max-late (ms, or NULL for no
	// limit), allow overlap (boolean), overlap limit (>= 1: with overlap
	// refused, the other live runs that refuse the claim), max attempts
	// (>= 1). It returns one
	// row: kind ("won", "running", "done", "overlap", "none", "late"),
	// attempt, holder, lease_until (ms or NULL), status, and fence: on
	// "won", the job's next fencing token, taken from the fence column of
	// the job row it locked and written back in the same transaction, as
	// the base's transaction does (SPEC §6, "Fencing"); 0 or NULL
	// otherwise. A routine that returns the first five columns only gives
	// no fences (ClaimOutcome.Fence 0).
	Claim string

	// Finish marks a run done. Arguments: job, slot, token, status. It
	// returns one row with one boolean: whether token held the run (or
	// already finished it with status).
	Finish string

	// Release releases a running lease. Arguments: job, slot, token. It
	// returns one row with one boolean: whether token held a running
	// lease.
	Release string

	// FinishResult finishes a run and saves its result, trimming the
	// history, as the base's FinishResult does. Arguments: job, slot,
	// token, instance, attempt, status, started_at (ms or NULL),
	// finished_at (ms or NULL), error, output, history size (> 0), history
	// TTL (ms, 0 for none). It returns one row with one boolean: whether
	// token held the run; when false, the result is stored with status
	// "lease_lost".
	FinishResult string

	// ClaimBatch decides a batch of plain claims (SPEC §4, batches) in one
	// statement, each as Claim's statements would. Argument: the claims
	// as a JSON array of {"j": job, "s": slot (ms), "t": token, "i":
	// instance}, in the order to decide them. It returns one row per
	// claim: its 1-based index, its kind ("won", "lost", "early") and,
	// for "early", the server's clock (ms). Empty: ClaimBatch runs Claim's
	// statements in one transaction.
	ClaimBatch string

	// ClaimRuns decides a batch of lease claims in one statement, each as
	// Claim would. Argument: the claims as a JSON array of {"j", "s",
	// "t", "i" as for ClaimBatch, "l": lease (ms), "m": max-late (ms, or
	// null for no limit), "o": allow overlap, "a": max attempts}. It
	// returns one row per claim: its 1-based index, then Claim's row.
	// Empty: ClaimRuns runs Claim (or its routine) for each claim in one
	// transaction.
	ClaimRuns string

	// SaveResult saves a result as the base's SaveResult does: the job's
	// lock, the result, a plain claim's run row marked done, and
	// trimming. Arguments: job, token, slot, instance, attempt, status,
	// claim token (whose run row gives the claim time; "" for none),
	// started_at (ms or NULL), finished_at (ms or NULL), error, output,
	// manual (0 or 1), plain (boolean: mark the run row of a plain claim
	// done), history size (> 0), history TTL (ms, 0 for none). Its rows,
	// if any, are ignored. Empty: the base's transaction.
	SaveResult string

	// Heartbeats renews a batch of leases in one statement, each as the
	// base's heartbeat statement would. Argument: a JSON array of {"j":
	// job, "s": slot, "t": token, "l": lease (ms, > 0)}, without two
	// entries for one (job, slot, token). It returns one row per lease
	// renewed: its job, slot and token. Empty: Heartbeats runs the
	// heartbeat statement per entry in one transaction.
	Heartbeats string

	// SaveResults saves a batch of results in one statement, each as
	// SaveResult would, in the array's order. Argument: a JSON array of
	// {"j": job, "t": token, "s": slot, "i": instance, "a": attempt, "st":
	// status, "c": claim token, "sa": started_at, "fa": finished_at (ms or
	// null), "e": error, "o": output, "m": manual (0 or 1), "p": plain,
	// "n": history size, "ttl": history TTL (ms)}. Its rows, if any, are
	// ignored. Empty: SaveResult's transaction body per entry, all in one
	// transaction.
	SaveResults string

	// FinishResults finishes a batch of runs in one statement, each as
	// FinishResult would, in the array's order. Argument: the same JSON
	// array as SaveResults (only "j", "t", "s", "i", "a", "st", "sa",
	// "fa", "e", "o", "n" and "ttl" are read). It returns one row per
	// entry: its 1-based index and FinishResult's boolean. Empty:
	// FinishResult's transaction body per entry, all in one transaction.
	FinishResults string
}
