package redisbackend

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua of every script, in lua/*.lua: lib_*.lua define functions that
// scripts prepend, the others are script bodies.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// lua returns lua/name.lua without its header (the leading comment
// lines). It panics if the file is missing: a build without it is broken.
func lua(name string) string {
	data, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redisbackend: " + err.Error())
	}
	src := string(data)
	for strings.HasPrefix(src, "--") {
		_, src, _ = strings.Cut(src, "\n")
	}
	return src
}

// script is a Lua script run with EVALSHA, falling back to EVAL when the
// server's script cache does not have it (go-redis Script.Run). src is kept
// for the pipelines, which issue EVAL themselves. batch, when set, is the
// same script for many calls at once (newBatchedScript).
type script struct {
	*redis.Script
	src   string
	batch *script
}

// luaArgs starts every script: the scripts read their keys and arguments
// from K and A, not from KEYS and ARGV, so that a batch (lua/batch.lua)
// can give each of its calls its own, and the server's clock from
// server_ms, so that a batch reads it once for all its calls
// (batch_now).
//
// One reading per batch is what each call alone would see had the batch
// run in no time: Redis runs nothing else while a script runs, so no
// client can tell the calls of one batch apart in time, and the reading
// falls between each call's send and its answer, as its own reading
// would. It judges a lease's end, never-early and max-late by the
// batch's start, at most the batch's run time (a few milliseconds,
// maxBatchCalls) before the call's own reading, and saves a TIME call
// per call on the server's one thread (bench/HISTORY.md §1, "Batch claims").
const luaArgs = `local K, A = KEYS, ARGV
local batch_now
local function server_ms()
  if batch_now then return batch_now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

func rawScript(src string) *script {
	return &script{Script: redis.NewScript(src), src: src}
}

func newScript(body string) *script {
	return rawScript(luaArgs + luaPrelude + body)
}

// newBatchedScript is newScript(libs + body) (without luaPrelude with bare,
// for a script that needs none of its helpers) with its batch form: one
// script that runs body once per call, each call with its own keys and
// arguments, and answers an array of their replies (lua/batch.lua). A
// batch of n calls is then one command instead of n in its pipeline. A
// call's Lua error is caught and becomes its own element of the reply, so
// a batch answers each call as its own script would; what each call wrote
// stays written, as it does when a script of its own fails half-way.
func newBatchedScript(bare bool, libs, body string) *script {
	prelude := luaPrelude
	if bare {
		prelude = ""
	}
	s := rawScript(luaArgs + prelude + libs + body)
	s.batch = rawScript(luaArgs + prelude + libs + "local function body()\n" + body + "\nend\n" + lua("batch"))
	return s
}

// Every script touches only keys with one job's hash tag, so it runs on
// one cluster slot, and passes them in KEYS; a batch on a single server
// passes each call's first key and builds the others from its tag (lua/
// batch.lua), which no script body can tell apart as long as it reads its
// keys as K[n] (never #K, ipairs or unpack of K) and does not write to
// A, the one table of arguments the batch's calls share. The clock is the server's TIME,
// read inside the script: since Redis 5 scripts replicate their effects
// (the written values), not the script, so replicas and the AOF store the
// same times the primary computed.
//
// Numbers: slots and times are Unix ms, well below 2^53, exact in Lua's
// doubles; they are written back as decimal strings with string.format('%d').
var luaPrelude = lua("lib_prelude")

// The run state of a slot doubles as the claim record of its current
// holder (fields tok, inst, att, at), so a claim writes one record. The
// claims hash keeps the records of earlier holders (moved there on a
// takeover) and of manual runs.
//
// A plain claim writes only its record in the run hash (state "claimed"):
// it enters the history index (hist) with its result, in save. Until then
// it is an unindexed claim, which History and trimming find in the run
// hash. This keeps the claim, the hot path, to one hash write.

// luaClaim defines claim(ctl key, paused), the plain claim (SPEC §4) on
// K[1] (run) with A slot, token, instance, early tolerance ms. It
// returns 1 (won, or won before with this token), 0, {-1, server now ms}
// for a new slot later than the server's now plus the tolerance (never
// early, SPEC §4), or, for a new slot of a paused job, what paused(slot,
// now ms string, control state) returns. It is written without the shared
// prelude and encodes its record by hand (the fields are those of
// cjson.encode, the strings escaped by cjson) to keep its Lua work small.
var luaClaim = lua("lib_claim")

// scriptClaim is the plain claim. KEYS: run, ctl (the job's control state,
// control.go). ARGV: slot, token, instance, early tolerance ms. Returns as
// claim, and {2} for a new slot of a paused job, writing nothing: the
// caller then runs scriptClaimPaused. So the claim of an unpaused job
// carries no history keys or helpers.
var scriptClaim = newBatchedScript(true, luaClaim, lua("claim"))

// scriptClaimPaused is the plain claim that settles a paused job's new
// slot under anarchon.PausedToken and saves its history record (save), in
// one step: it decides again, so a resume meanwhile claims the slot.
// KEYS: run, claims, hist, results, age, ctl. ARGV: slot, token,
// instance, early tolerance ms, history size, history TTL ms. Returns as
// claim, and 0 for the settled slot.
var scriptClaimPaused = newScript(luaUnindexed + luaSave + luaClaim + lua("claim_paused"))

// scriptManual records a RunNow run (no deduplication).
// KEYS: claims, hist. ARGV: slot, token, instance.
var scriptManual = newScript(lua("manual"))

// scriptLeaseClaim decides a lease claim per the table of SPEC §6, first
// match wins.
// KEYS: run, claims, hist, results, age, active, ctl, fence.
// ARGV: slot, token, instance, lease ms, max-late ms (0 = none),
// allow overlap ('1'/'0'), max attempts, channel, job, early tolerance ms,
// history size, history TTL ms (for a paused slot's record), overlap
// limit (>= 1: with overlap refused, the other live runs that refuse it).
// Returns {kind, attempt, holder, lease until ms (string), status}, and
// for a win (a new run, a takeover, a renewal by the same token) a sixth
// element, the fence: the job's counter in the key fence after the INCR
// that the win does in the same script (SPEC §6, "Fencing"); kind as
// anarchon.OutcomeKind: 1 won, 2 running, 3 done, 4 overlap, 5 none, 6 late,
// 7 paused (the slot is settled and its history record saved); -1 (early)
// with the server's now in place of the lease end for a new slot later
// than the server's now plus the tolerance (SPEC §4).
var scriptLeaseClaim = newBatchedScript(false, luaUnindexed+luaSave, lua("lease_claim"))

// scriptHeartbeat extends a running lease held by the token.
// KEYS: run. ARGV: slot, token, lease ms. Returns {1|0, lease until ms}.
var scriptHeartbeat = newBatchedScript(false, "", lua("heartbeat"))

// luaFinish defines finish(slot, token, status, channel, job): it marks
// the token's run done with a status and publishes a finished event.
// Repeating it after it succeeded answers 1 again and keeps the first
// status; the last holder of an abandoned slot gets 0. Keys: K[1] run, K[6] active.
var luaFinish = lua("lib_finish")

// scriptFinish is RunStore.Finish.
// KEYS: run, claims, hist, results, age, active (the layout of
// scriptFinishResult; it touches run and active). ARGV: slot, token, status,
// channel, job. Returns 1 or 0.
var scriptFinish = newScript(luaFinish + lua("finish"))

// scriptRelease ends the token's running lease at once. Repeating it after
// it succeeded answers 1 again.
// KEYS: run. ARGV: slot, token, channel, job.
var scriptRelease = newScript(lua("release"))

// scriptActive lists unfinished runs, oldest slot first.
// KEYS: run, active. Returns {now ms, slot1, run1, slot2, run2, ...}.
var scriptActive = newScript(lua("active"))

// luaUnindexed defines unindexed(run, claims, hist): the runs whose
// current claim (a non-empty token) is not in the history index (plain
// claims without a result yet, see scriptClaim) as {s = slot number, m =
// member, at = claim time ms or nil}, oldest slot first.
//
// It reads the whole run hash only when the run states plus the claims
// hash (the records of manual runs and earlier lease holders, each a
// member of hist without a run state of its own) outnumber the members of
// hist: without unindexed claims they never do, since every other run
// state has its member in hist, or (a slot settled under a token) a member
// that stands for it. So saves and History of a job with no claim waiting
// for its result pay three counts, not a scan. Members of neither kind (a
// slot recorded as abandoned under its own token, which only leased jobs
// have) can hide as many unindexed claims until they are trimmed
// themselves; unindexed claims come from plain claims, so only a job
// switched between the two modes can meet both.
var luaUnindexed = lua("lib_unindexed")

// luaSave defines save(slot, token, result JSON, history size, history TTL
// ms (0 = none), [server now ms]): it stores a result and trims the
// history; and paused_result(slot, instance, control state), the record
// of a slot settled by a pause.
// Keys: K[1] run, [2] claims, [3] hist, [4] results, [5] age.
//
// A history member is "slot/token" ("slot/" for a slot settled without a
// token). A member's age is the server time its result was saved ("age"
// scores members that have a result) or, without a result, its claim time
// (field "at" of its claim record). Claims do not write "age", which keeps
// a claim to one sorted-set write. Since a slot is claimed at or after its
// time, a member claimed before the cutoff has a slot before it, so the
// claim-only members to check are found by slot. Trimming drops the members
// older than the TTL, then the oldest members (by slot) beyond the size,
// with their claim and result records. When the member of a slot's current
// claim goes (or, for a state without a token, the slot's last member),
// the slot's run state goes too and the slot becomes the watermark (if
// newer), so a later claim for it loses. The members of a running or
// released run are kept.
var luaSave = lua("lib_save")

// scriptSave is Backend.SaveResult.
// KEYS: run, claims, hist, results, age.
// ARGV: slot, token, result JSON, history size, history TTL ms.
var scriptSave = newBatchedScript(false, luaUnindexed+luaSave, lua("save"))

// scriptFinishResult is RunStore.FinishResult: finish, then save the
// result, or, if the token no longer holds the run, save it as lease_lost.
// KEYS: run, claims, hist, results, age, active.
// ARGV: slot, token, status, channel, job, result JSON, lease-lost result
// JSON, history size, history TTL ms. Returns 1 or 0 as finish.
var scriptFinishResult = newBatchedScript(false, luaFinish+luaUnindexed+luaSave, lua("finish_result"))

// scriptHistory reads a job's history in one snapshot, newest first.
// KEYS: claims, hist, results, run. ARGV: limit (0 = all).
// Returns {member1, claim1, result1, ...}; a missing record is "". With a
// limit, every member sharing the oldest returned slot is included, so
// ordering within a slot is left to anarchon.BuildHistory. Unindexed plain
// claims (read from the run hash) are merged in by slot.
var scriptHistory = newScript(luaUnindexed + lua("history"))

// scriptReplace is RunStore.Replace: if the token holds the running run
// of the slot, it settles every earlier running or released run of the
// job as done with status replaced (token kept), saves a replaced result
// for each unless one is stored, and publishes a finished event for each.
// KEYS: run, claims, hist, results, age, active.
// ARGV: slot, token, channel, job, history size, history TTL ms.
// Returns {0} if the token does not hold the slot, else {1, now ms, slot1,
// run1 (JSON before the change), slot2, run2, ...}.
var scriptReplace = newScript(luaUnindexed + luaSave + lua("replace"))

// scriptWithdraw takes back a won claim whose WAIT fell short (see
// Backend.withdraw): a plain claim's run state is deleted; a lease claim
// of attempt 1 is deleted with its history and active entries, so the
// slot is absent again; a takeover (attempt 2 or more) is released, so
// the next claim is the next attempt. It touches the run only if token
// holds it (claimed, or running).
// KEYS: run, hist, active. ARGV: slot, token, channel, job. Returns 1 if
// it took the claim back, 0 if token did not hold it.
var scriptWithdraw = newScript(lua("withdraw"))

var allScripts = []*script{
	scriptClaim, scriptClaimPaused, scriptManual, scriptLeaseClaim, scriptHeartbeat,
	scriptFinish, scriptRelease, scriptActive, scriptSave, scriptHistory,
	scriptFinishResult, scriptReplace, scriptWithdraw,
}
