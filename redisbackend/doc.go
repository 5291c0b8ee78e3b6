// Package redisbackend is the Redis store of anarchon: plain claims (SPEC
// §4), leases (SPEC §6), history, a pub/sub watcher and the server clock,
// each operation one atomic Lua script.
//
// It lives in its own Go module, github.com/anarchon/anarchon/redisbackend,
// so that go-redis is a dependency only of programs that import it.
//
// # Guarantees
//
// Job control (SPEC §12): the job's state is a key in its hash slot that
// both claim scripts read, so a claim that reaches the server after
// SetPaused settles the slot as paused atomically, with its history
// record in the same script (a plain claim, whose script carries no
// history keys, runs a second script for it that decides again), so a
// claimer that dies leaves no slot settled without its record
// (TestPausedSlotRecordedInOneStep). Trigger requests
// are a per-job hash claimed by a script. The Control and Trigger
// subtests pass against a real server.
//
// Overlap limit and replace (SPEC §6): the lease claim script counts the
// job's live runs itself (RunClaim.Limit), and [RunStore.Replace]
// ([anarchon.Replacer]) is one script, so both are atomic; the
// Overlap/Limit (racing claims of different slots) and Replace subtests
// pass against a real server.
//
// Each operation (plain claim, lease claim, heartbeat, finish, release,
// active, save-result with trimming, finish-and-save
// ([RunStore.FinishResult]), manual run, history) is one Lua script,
// run with EVALSHA and EVAL as a fallback. Redis runs a script atomically:
// no other command interleaves, so for one (job, slot) exactly one token
// wins. A repeat with the winning token wins again (SPEC §4 repeat safety),
// so a retry after a lost reply is safe, including go-redis's own retries
// (Options.MaxRetries of the client).
//
// Batches ([Backend.ClaimBatch], [RunStore.ClaimRuns]) run the single
// claim's script for each claim, so each answer is the one a single
// claim gives. They run it in the script's batch form: one script that
// runs the single call's text once per call, each with its own keys and
// arguments, up to 512 calls per EVALSHA (one per cluster slot through a
// cluster client, whose scripts may not span slots). What the calls share
// goes once per batch: an argument every call has the same is sent once,
// and only the others per call (a burst's lease claim sends 2 of its 13,
// token and job: TestBurstLeaseClaimShares); on a single server KEYS holds each call's first
// key, and its other keys are built in the script from that key's hash
// tag and the suffixes the batch sends once. Through a cluster client a
// batch declares every key of every call: a cluster checks only declared
// keys before a script runs, so a slot being migrated then refuses the
// whole batch before it writes (TRYAGAIN or ASK), as it refuses a single
// call, instead of failing it at an undeclared key after earlier writes
// (TestBatchOnMigratingSlot). The server parses and copies far fewer
// arguments, which its command statistics do not count but its CPU does
// (BENCHMARKS.md §8). A burst of 10,000
// plain slots on 3 processes took 191 script calls instead of 40,018; the
// server's CPU per burst did not fall (0.40 s against 0.36 s,
// bench/HISTORY.md §8): it goes to the scripts' own work. A call whose
// script fails (an error reply, a Lua error) gets that error as its own
// answer; the other calls of the batch are answered. Each answer is the
// one a single claim gives, one winner per slot across batches and single claims: the
// anarchontest Batch and RunBatch subtests pass against a real server,
// and TestClaimBatchRace races batches and single claims from 8 handles
// for 400 slots each of plain and lease claims with exactly one winner
// per slot. The batches of what follows a burst's claims
// ([RunStore.Heartbeats], [Backend.SaveResults],
// [RunStore.FinishResults]) run the single call's script for each entry
// the same way: the anarchontest HeartbeatBatch, ResultBatch and
// FinishBatch subtests pass against a real server, and
// TestRunBatchAnswersAsSingle finds the same answers and history after
// batches as after single calls, for held, lost, released, finished and
// unknown runs, repeats and bad input.
//
// A plain claim is one EVALSHA that reads two fields of the job's run hash
// and the server's TIME, and writes one hash field: one round trip, like
// SET NX PX (BenchmarkClaim measures both in one run). The claim enters the
// job's history index with its result; until then History and trimming
// find it in the run hash.
//
// Leases are judged by one clock, the Redis server's: each script reads
// TIME itself, and a batch script once for all its calls, which Redis runs
// with nothing in between (scripts.go, luaArgs). That is safe to replicate
// because, since Redis 5, scripts are replicated by their effects (the
// commands they ran with the values they wrote, MULTI/EXEC-wrapped), not by
// re-running the script on the replica; Redis 7 only does this. A replica
// therefore stores the lease times the primary computed. The clock is that
// of the node holding the job's keys; after a failover it is the new
// primary's, so keep the servers' clocks in sync (NTP) if leases must
// survive failovers exactly.
//
// What survives a restart depends on the server's persistence:
//
//   - No persistence (save "" and appendonly no): a restart forgets every
//     claim, lease and history record. A slot still inside its MaxLate (plus
//     jitter) could then be claimed and run a second time. Use this only for
//     tests or jobs that tolerate a repeat.
//   - RDB snapshots only: a restart loses what was written since the last
//     snapshot, with the same risk for those slots.
//   - AOF with appendfsync always: a claim acknowledged to a client is on
//     disk; a restart loses nothing. With appendfsync everysec (the usual
//     setting) up to about a second of claims can be lost on a crash of the
//     machine (a crash of the process alone loses nothing the kernel has).
//
// Replication is asynchronous: a primary acknowledges a claim before its
// replicas have it. If the primary fails right after, a promoted replica may
// not know the claim, and another instance can win the same slot: with
// Sentinel or Cluster failover, an acknowledged claim can be lost. Set
// [Options.Replicas] to make a winning claim wait (WAIT numreplicas
// timeout) until that many replicas acknowledged it; if fewer do within
// [Options.ReplicaTimeout] the claim returns an error wrapping
// [ErrNotReplicated] and the scheduler does not run the slot (fail closed).
// The backend then withdraws the claim from the primary: a first claim is
// deleted, so the slot is free again and a claim after its MaxLate is
// answered late; a lease takeover is released, so the next claim is the
// next attempt. (Left in place, a retry with the same token won the claim
// again as soon as a replica was back: leased slots started tens of
// seconds after their MaxLate; TestWaitShortfallWithdrawn.) WAIT narrows the window but is not
// consensus: Redis can still promote a replica that missed the write when
// several nodes fail. WAIT runs in one pipeline with the script, on the
// connection of the job's primary, so it costs no extra round trip.
//
// WAITAOF (Redis 7.2) is not used. It waits for the claim to be written to
// the append-only files of the primary and of replicas, which is what a
// crash of every node at once (a power loss of one rack) needs; a failover
// promotes a replica from its memory, which WAIT already covers. A single
// server that must keep claims through its own crash needs appendfsync
// always (the list under "Guarantees"), which WAITAOF 1 0 would only
// repeat for each claim at a round trip's cost.
//
// Fencing (SPEC §6, "Fencing"): every won lease claim — a new run, a
// takeover, a renewal by the same token, single or in a batch — INCRs
// the job's counter "{prefix:job}:fence" in the lease claim script and
// answers the new value as its fence ([anarchon.ClaimOutcome].Fence,
// Run.Fence). The counter shares the job's hash tag, so it lives on the
// job's primary (or Cluster master) with its claims, and the script is
// atomic, so of two wins of a job the later one reads the larger value.
// The INCR is part of the script's effects, replicated with the claim as
// one MULTI/EXEC, so a WAIT that covers the claim covers its fence. Where
// it holds is where the claims hold: on one server with AOF
// (appendfsync always), and with [Options.Replicas] through the failover
// of one node in the topology below. The failover drills check that every
// leased start carries a fence, that a later holder of a slot has a
// larger one and that no two starts share one: in one CI run each on
// 2026-12-01, the Sentinel drill (WAIT 1, one kill) gave fences 1–34 to
// its 34 leased starts and the Cluster drill (no WAIT, replicas caught
// up) 1–28 to its 28, no fault. A claim that falls short of WAIT answers an error and is
// withdrawn, so its fence is never handed to a handler; the counter is
// not taken back, and the next win's fence is larger anyway. Without
// WAIT a promoted replica that missed a claim missed its INCR too, and
// with no persistence, or after FLUSHALL or eviction, the counter goes
// back with the claims: a later holder can be given a fence an earlier
// holder still carries, and a downstream system that kept the earlier,
// larger fences refuses the new holders' writes until the counter passes
// them (see "Stores that forget", where claims fail closed for LossHold
// after such a loss).
//
// # Replication and failover
//
// The topology that keeps exactly-once through the loss of any one node:
// a primary and two replicas under three Sentinels (or a Cluster whose
// masters have two replicas each), [Options.Replicas] = 1 (URL wait=1), and
// min-replicas-to-write 1 on every server. Each acknowledged claim is then
// on the primary and at least one replica; Sentinel promotes the replica
// with the most data, which has every acknowledged claim unless both it and
// the primary fail. A WAIT for every replica there is (1 of 1) keeps
// claims as safe but stops every claim while any one node is down.
// min-replicas-to-write makes a primary cut off from its replicas refuse
// claims (NOREPLICAS, retried) instead of taking claims it cannot
// replicate. Init logs the topology it finds and a WARN naming the risk of
// an unsafe one (once per backend: the Init calls after one that
// succeeded log none of its report).
//
// With [Options.Replicas], lease renewals and finishes wait for the
// replicas too: a renewal a failover lost would let a backup take a run
// over while its holder still runs, a lost finish would let a backup run
// a finished slot again (attempt 2). Such a call that falls short fails
// with [ErrNotReplicated]; the holder then stops at its lease's safe end,
// or repeats the finish, as after any store error. A batch of renewals or
// finishes waits once per master, and each entry the WAIT fell short for
// fails the same way (TestRunBatchReplicas, with and without a replica,
// and on a cluster).
//
// A Cluster client ([redis.ClusterClient]) is told to reload its slot map
// (ClusterClient.ReloadState, at most every 250 ms) when a call meets an
// error a failover causes (the network, CLUSTERDOWN, TRYAGAIN, MASTERDOWN,
// READONLY): go-redis reloads it on MOVED and ASK only, and otherwise every
// ClusterStateReloadInterval (60 s by default), so without this a client
// kept dialling a dead master long after the cluster had promoted its
// replica (redis/go-redis#3979).
//
// What the tests measured, on loopback (Redis 7.0, three schedulers in one
// process with -race, a 1 s plain job and a 1 s leased job, 300 ms
// handlers, MaxLate 5 s, lease 3 s; Sentinel down-after-milliseconds 1000
// and failover-timeout 4000; cluster-node-timeout 1000). Figures are per
// kill and per job; "resume" is from the SIGKILL to the first handler start
// of a slot due after it; "promotion" is from the SIGKILL until the
// servers named the new primary:
//
//	topology                        fault                      lost slots  duplicates   after MaxLate  resume (promotion)
//	Sentinel: primary + 2 replicas, SIGKILL of the primary,    0–3         0            0              2.3–3.4 s (2.2–3.4 s)
//	  WAIT 1, min-replicas 1          7 kills in 3 min 24 s
//	the same, before renewals and   the same, 7 kills          0–3         2 (attempt   0              2.2–3.6 s (2.3–2.7 s)
//	  finishes waited                                                      2 reran)
//	Sentinel without WAIT           SIGKILL of the primary,    0–2         0            0              2.2–2.3 s (2.3 s)
//	                                  replicas caught up
//	Cluster: 3 masters, 3 replicas, SIGKILL of the leased      0–3         0            0              2.6–3.7 s (2.3–2.7 s)
//	  no WAIT                         job's master
//	Cluster: 3 masters, 6 replicas, the same (daemon drill,    1–2         0            0              2.6–2.7 s (2.5–2.6 s)
//	  WAIT 1                          2 runs)
//	the same without the slot-map   the same                   every slot  0            0              none within 20 s (3 s)
//	  reload                                                   after it
//	WAIT for more replicas than     every claim                all         0            0              when a replica is back
//	  answer
//
// Commands, in the faults module, where every store's failover drill
// lives (servers from scripts/services/redis.sh, its variable exported):
//
//	go test -race -count=1 -v -run TestSentinelFailoverDrill .                                  # one kill, CI
//	ANARCHON_REDIS_FAILOVER_SOAK=3m go test -race -count=1 -v -run TestSentinelFailoverDrill .  # a kill every ~27 s
//	ANARCHON_REDIS_FAILOVER_WAIT=0 go test -race -count=1 -v -run TestSentinelFailoverDrill .   # no WAIT
//	ANARCHON_REDIS_FAILOVER_LAG=stall go test -race -count=1 -v -run TestSentinelFailoverDrill . # replication stalled 3 s before the kill
//	go test -race -count=1 -v -run TestClusterFailoverDrill .                                   # Cluster, CI
//	ANARCHON_REDIS_CLUSTER_NO_RELOAD=1 go test -race -count=1 -v -run TestClusterFailoverDrill .
//
// and in this module:
//
//	go test -race -count=1 -run 'TestWaitReplicasShortfall|TestWaitShortfallWithdrawn' .
//
// RELIABILITY.md has the runs. With ANARCHON_REDIS_FAILOVER_LAG=stall
// the replicas replicate through a proxy that stalls them for 3 s before
// the kill: without WAIT the promoted replica lacks the acknowledged
// claims of the stall, fencing tokens are handed out again (three
// shared per run) and a slot can run twice as attempt 1 (one in three
// runs); with WAIT 1 the claims of the stall fail closed and nothing runs
// twice. The Cluster drill runs without WAIT (one replica per master:
// WAIT 1 would stop the shard's claims until the killed node is back).
// A Cluster's safe topology, two replicas per master and WAIT 1, is the
// daemon's Cluster drill (faults.TestDaemonFailoverCluster, through
// redis://…?cluster=true&wait=1): in two runs the kill of the leased
// job's master lost 1 plain and 2 leased slots each, ran nothing twice
// and no run past MaxLate, and the leased job started again 2.6–2.7 s
// after the kill (promotion 2.5–2.6 s).
//
// The instance registry (SPEC §10, [Backend.RegisterInstance]) is one
// script per registration, deregistration and list, each reading the
// server's TIME; a record is live while that time is before its expiry.
// The anarchontest Registry subtests pass against redis-server.
//
// # Stores that forget
//
// Redis can lose acknowledged claims: an eviction policy may drop keys
// under memory pressure, and a server without persistence (or one that
// is flushed) forgets everything. A forgotten claim lets its slot run
// again, and Run.Attempt cannot fence that (SPEC §6, "Stores that
// forget"). So Init reads maxmemory_policy (INFO memory, which works where
// CONFIG is disabled) and refuses allkeys-* and volatile-* with
// [ErrEvictionPolicy] unless [Options.AllowEviction] (then it logs a
// WARN); it logs a WARN when persistence is off (save "" and appendonly
// no, read with CONFIG GET; without CONFIG, when INFO shows AOF off). Init
// also writes a sentinel key, "{<prefix>:}:epoch", which claims read at
// most once a second: when it is gone (FLUSHALL, FLUSHDB, a restart
// without persistence) the backend logs an ERROR naming the loss, writes
// it again, and fails claims closed with [ErrDataLost] for
// [Options.LossHold] (30 s), so that runs claimed before the loss see
// their heartbeats fail and stop before their slots can be claimed anew.
// A loss in the second before a check is not seen until it. With
// [Options.MustExist] (for tools that only read) Init writes neither the
// sentinel nor its scripts, and a missing sentinel is [ErrNoData].
//
// # Server requirements
//
// Redis 5.0 or later (or a compatible server such as Valkey) with Lua
// scripting (EVAL, EVALSHA, SCRIPT LOAD, cjson) and pub/sub; Init checks
// the version and refuses older servers with [ErrServerTooOld]. The user
// needs the commands EVAL, EVALSHA, SCRIPT, PING, INFO, TIME, SUBSCRIBE and,
// with Options.Replicas, WAIT, plus read and write on the prefix's keys
// (ACL pattern "~{prefix:*" and channel "&prefix:runs"). Options.Replicas
// needs a *redis.Client or *redis.ClusterClient. Slots must lie within
// ±2^53 ms ([MaxSlot]), the integers Lua's numbers hold exactly.
//
// # Setup
//
// Give it a go-redis client you own, or a URL:
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", Password: pw})
//	b, err := redisbackend.New(client, &redisbackend.Options{Prefix: "myapp"})
//	// or
//	b, err := redisbackend.Open("rediss://user:pw@redis.example:6380/0", nil)
//	if err != nil { … }
//	s := anarchon.New(b, nil)
//
// [New] takes any [redis.UniversalClient]: a *redis.Client (standalone, or
// Sentinel through redis.NewFailoverClient) or a *redis.ClusterClient. The
// backend never closes a client passed to New. [Open] reads redis:// and
// rediss:// URLs, Sentinel URLs (redis+sentinel://s1,s2,s3/?master=NAME)
// and Cluster URLs (redis://a,b,c?cluster=true), with wait= and
// wait_timeout= for [Options.Replicas], and closes its own client in Close.
// AUTH (user and password), TLS, timeouts and pool sizes are the client's
// options; no password ever appears in an error of this package (URLs are
// shown redacted).
//
// Every instance of an application must use the same Redis (or cluster) and
// the same [Options.Prefix].
//
// # Performance
//
// Every call is one script (EVALSHA; EVAL once after a server restart), so
// one round trip: a plain claim writes one hash field, a lease claim
// decides SPEC §6's table server-side, FinishResult finishes, saves and
// trims at once. With [Options.Replicas], a winning claim adds a WAIT in
// the same pipeline. BENCHMARKS.md §1 measured, on loopback: a plain claim
// at 59 µs p50 with one claimer (1.13× a bare SET NX) and 87 µs with 4
// (1.04×); a lease claim at 67 µs and 127 µs p50 (1.29×, 1.51×); about
// 35,800 plain and 26,100 lease claims/s with 4 claimers.
//
// A batch ([Backend.ClaimBatch], [RunStore.ClaimRuns]: the
// anarchon.BatchClaimer and anarchon.RunBatchClaimer abilities) sends
// the claims as the claim script's batch form, one EVALSHA for up to 512
// of them, in one pipeline: one round trip per batch, whatever its size.
// New slots of paused jobs add one pipeline for their settling script,
// and a server that lost its script cache (NOSCRIPT) one more with EVAL;
// through a ClusterClient go-redis sends each master its share side by
// side; with [Options.Replicas] each master's pipeline ends with one WAIT
// (TestClaimBatchRoundTrips counts the pipelines; TestClaimBatchReplicas).
// The server still runs each claim's script text, so a batch saves round
// trips, not script time: BenchmarkClaimBatch measured a burst of 1,000
// plain claims (1,000 jobs) at 7.6–9.8 ms as one batch against 68–73 ms
// as single claims (7.4–8.6×) and 2.6–2.9 ms for 1,000 SET NX PX in one
// pipeline (2.6–3.1×); lease claims at 19.9–20.0 ms against 89–90 ms
// (4.4–4.6×). Loopback, redis-server 7.0.15, a 2-core machine at load
// average 2.18, where the server's command statistics gave 5.3–7.0 µs
// per plain claim and 15.0–15.3 µs per lease claim of a batch (3.8–4.9
// and 6.7–7.2 µs per claim that finds its slot taken), and 1.1–1.3 µs
// per SET (BENCHMARKS.md §1).
//
// Heartbeats, results and finishes of many runs
// ([RunStore.Heartbeats], [Backend.SaveResults], [RunStore.FinishResults]:
// the anarchon.HeartbeatBatcher, ResultBatcher and FinishBatcher
// abilities) are batched the same way: one EVALSHA of the single call's
// script per entry, all in one pipeline, one round trip per batch (one
// more after NOSCRIPT; per master on a cluster). With [Options.Replicas]
// a batch of renewals or finishes ends each master's pipeline with one
// WAIT; results, like SaveResult, wait for none. An entry refused for
// its input sends nothing (TestRunBatchRoundTrips counts one pipeline of
// 100 scripts for 100 entries, of 100 jobs or one).
//
// # Dedupe window and memory
//
// [Backend.DedupeWindow] is [anarchon.Forever]. Claims are kept with the
// job's history and trimmed with it (by HistorySize and HistoryTTL, in
// SaveResult). When the history record of a slot's current claim is trimmed
// (for a slot settled without a claim, its last record), the slot's state
// is deleted and the slot becomes the job's watermark if it is newer than
// the current one; a claim for a slot at or below the watermark that has
// no state loses (a lease claim answers done). So trimming never reopens a
// slot. The price: a slot older than the newest trimmed slot that was never
// claimed can no longer be claimed; since slots are claimed in time order
// and trimming keeps the newest HistorySize records, such a slot is far
// past its MaxLate.
//
// Memory is bounded per job, not per slot ever claimed: a retained run (its
// state and claim, stored result and two sorted-set entries) takes about
// 600 bytes on Redis 7.0 (measured with MEMORY USAGE in TestMemoryPerRun)
// plus its error text and output tail, times the job's HistorySize (100 by
// default, so about 60 KB per job), plus a few small keys per job. Keys
// never expire by TTL. Runs still running or released are never trimmed: a
// run whose holder died and that no instance claims again stays in
// [RunStore.Active] (not live) until a claim of its slot takes it over or
// abandons it.
//
// # Keys
//
// All keys of a job share the hash tag {prefix:job}, so a script touches one
// cluster slot, and every key a script touches is passed in KEYS (but for
// a batch on a single server, which passes each call's first key and
// builds the others from its tag: "Batches" above):
//
//	{prefix:job}:run      HASH  slot -> run state and current claim (token, holder, attempt, state, lease until, claimed at);
//	                            field "mark" -> the watermark slot
//	{prefix:job}:claims   HASH  token -> claim record of an earlier holder or a manual run
//	{prefix:job}:results  HASH  history member -> stored result
//	{prefix:job}:hist     ZSET  history members "slot/token" scored by slot (a plain claim's with its result)
//	{prefix:job}:age      ZSET  the same members scored by the server time they were written
//	{prefix:job}:active   ZSET  slots running or released
//	{prefix:job}:fence    STRING the job's last fencing token (INCR by each won lease claim)
//	{prefix:}:inst        HASH  instance ID -> instance registry record (SPEC §10)
//	{prefix:}:inst:exp    ZSET  instance IDs scored by the server time their record expires
//
// '%', '{' and '}' in job names are percent-encoded. Records are JSON with
// numbers as decimal strings; readers ignore fields they do not know, so two
// versions of the backend can share a store during a rolling deploy.
// Release and finish publish a JSON event on the channel "prefix:runs"
// (PUBLISH from inside the script), which [Backend.WatchRuns] subscribes to.
// On a cluster, PUBLISH reaches every node.
//
// # Errors
//
// Errors from go-redis are wrapped with %w at this boundary, so errors.Is
// and errors.As still reach the native error (a net.Error, a redis.Error, a
// context error); redis.Nil is never returned. Bad arguments give
// [ErrInvalidInput] before any I/O; a closed backend gives errors wrapping
// [anarchon.ErrClosed]. Errors a retry cannot fix are marked
// anarchon.Permanent: bad input, a closed backend, unexpected replies, a
// too old server, and the error replies [IsPermanent] names (WRONGTYPE,
// ERR, NOAUTH, WRONGPASS, NOPERM, EXECABORT). The scheduler retries the
// others: LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, READONLY, MASTERDOWN, OOM,
// the network.
package redisbackend
