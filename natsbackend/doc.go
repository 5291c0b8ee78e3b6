// Package natsbackend is anarchon's NATS JetStream backend: claims are KV
// Create calls, leases are KV updates by revision compare-and-set, history
// is a stream.
//
//	b, err := natsbackend.Open("nats://127.0.0.1:4222", nil)
//	if err != nil { … }
//	s := anarchon.New(b, nil)
//
// [Open] owns its connection and closes it in Close; [New] takes the
// caller's *nats.Conn and [NewJetStream] a jetstream.JetStream (for a
// domain or an API prefix), and neither closes what it was given.
//
// # Guarantees
//
// Job control (SPEC §12) is not atomic with the claim: JetStream KV has
// no write conditioned on another key, so a claim reads the job's state
// ("p.<job>") just before its Create. A pause stored between that read
// and the Create is missed by that one claim: the window is about one
// round trip to the server; on a single server (R1) every claim that
// starts after SetPaused returned sees it. With R3 the read is a direct
// get (the bucket allows them), which any replica may answer: one that
// has not yet applied the pause widens the window by its lag. The claim
// whose Create settled a slot as paused then publishes the slot's history
// record: a claimer that dies between the two leaves the slot settled
// (no instance runs it) without its record. Trigger requests are claimed
// by a revision compare-and-set, so one token wins. The Control and
// Trigger subtests pass against a real server.
//
// Overlap limit and replace (SPEC §6): the overlap check of a claim
// counts the job's live runs (RunClaim.Limit) in the compare-and-set of
// the job key, so of two claims listed at once the second counts the
// first; a claim answered running for a run its holder has created but
// not listed yet lists it first (ensureListed), so that no claim made
// after that answer finds the job key without it
// (TestRunningBeforeListedCountsForOverlap); [RunStore.Replace] ([anarchon.Replacer]) settles each earlier run
// by its own compare-and-set (a run is replaced once), but checks that
// the caller holds its slot in a separate read. The Overlap/Limit
// (racing claims of different slots) and Replace subtests pass against a
// real server.
//
// The one rule (one winner per slot) holds as long as JetStream keeps
// acknowledged writes. What that means depends on the server:
//
//   - Replicas. With R1 (the default, and the only choice on a single
//     server) a bucket lives on one server: if its disk is lost, so are the
//     claims, and while that server is down or frozen no claim succeeds,
//     even on a cluster. With R3 on a three-node cluster a write is
//     acknowledged once a majority has it; losing one node loses nothing,
//     and the compare-and-set stays atomic because the stream's leader
//     orders all writes. Set [Options.Replicas] to 3, or [AutoReplicas],
//     before the bucket is first created (or edit the stream: Init never
//     changes it). Init logs the replicas it found ([Backend.Topology]),
//     and a WARN for one replica on a cluster or for a bucket whose
//     replicas differ from Options.Replicas.
//   - Timeouts. Every call is bounded by [Options.Timeout] inside the
//     caller's deadline, so a server that freezes without closing the
//     connection fails a claim after Timeout instead of holding it for the
//     scheduler's 30 s (TestFrozenServerTimesOut). Give the connection a
//     short ping interval (nats.PingInterval, nats.MaxPingsOutstanding) so
//     that the client leaves a frozen server for another of the cluster;
//     until it does, its claims fail. Within Timeout, the requests of a
//     claim that nobody answered because the stream's leader was lost are
//     sent again as soon as the server announces a new leader (the
//     stream's leader-elected advisory, which the connection must be
//     allowed to subscribe to), and every 250 ms while no server
//     subscribes on a bucket of several replicas: a claim that straddles
//     the election is then answered by the new leader
//     (TestClaimAcrossElection, TestRecordClaimAcrossElection). The
//     batched calls' writes (claims' creates, heartbeats' and finishes'
//     compare-and-sets, result records) are sent again the same way, so
//     that a leased run's finish lands as soon as the new leader is
//     elected, before its lease ends (TestFinishBatchAcrossElection: 4.2–8.0
//     s after a frozen leader in 15 runs, with a 20 s Timeout that the
//     batch waited out before). Only requests whose second copy is harmless are sent again:
//     reads, creates and compare-and-sets (a copy of one that landed fails
//     as a revision mismatch, which the call answers by reading its own
//     token; a lease claim that finds its own running run not yet listed
//     in the job key completes it as the first copy would have: the
//     overlap check, the listing, the claim record, TestClaimAfterLostAnswer),
//     and history records (the stream deduplicates them by their
//     Nats-Msg-Id: "c.<token>" for a claim, "r.<token>.<instance>.<status>" for a
//     result). A read is also cut off and sent again after a quarter of
//     Timeout: a direct get may be served by a frozen replica, which
//     keeps its subscription for minutes and answers nothing. Within each
//     such try a direct get is hedged: while unanswered, another copy goes
//     out after a fifth of the try (at least 500 ms), three at most, each
//     to a replica picked at random again, and the first answer is taken.
//     With the leader of a three-node cluster frozen, about one direct get
//     in three went unanswered, before and after the election alike; a
//     batch's read that met it four tries in a row once took a whole 20 s
//     Timeout (3 of 37 runs of TestFinishBatchAcrossElection took 16–20 s
//     before the hedge, none of 15 after it).
//   - Reads of replicas that lag. A direct get is answered from the
//     replica's own copy, and a replica that was cut off or frozen answers
//     what it held when it comes back, before it has caught up. Every
//     write decided on a read is a compare-and-set on the read revision,
//     so a lagging read only costs a retry. A refusal is different: a
//     holder's heartbeat, finish or release that the read shows not held
//     (the run absent, or another token's) is read again from the
//     stream's leader (the JetStream API's message get, which only the
//     leader answers) and decided on that, so that a holder is never told
//     its lease is lost by a copy that has not seen it
//     (TestLaggingReplicaIsNotARefusal). So is a run that the overlap
//     check finds absent among the slots a job key lists: the commit's
//     compare-and-set is on the job key, not on that run, so a live run
//     read as absent and dropped would let a claim past RunClaim.Limit;
//     the leader confirms it first (TestLaggingReplicaIsNotAnAbsentRun).
//   - Disk sync. By default nats-server flushes file storage to disk every
//     two minutes (sync_interval). A server process that crashes loses
//     nothing (the data is in the OS page cache, see
//     TestServerRestartKeepsAnswer), but an OS crash or power loss can lose
//     writes acknowledged in the last two minutes, and a slot could then
//     be claimed twice. Set "jetstream { sync_interval: always }" on the
//     server where that matters; with R3 a single machine's crash is
//     covered by the other replicas.
//   - Memory storage ([Options.MemoryStorage]) forgets everything on
//     restart.
//   - Leases are judged by the clock of the server that answers: with R3
//     the stream leader stamps the writes and answers the time reads, so a
//     leader change compares times from two machines; keep the cluster's
//     clocks synchronized (NTP) and leases well above their skew.
//   - One key per job. A won lease claim lists its slot in the job's key
//     ("j.<job>", which the overlap check reads) by compare-and-set, so
//     claims of many slots of one job won at the same moment take turns;
//     one that loses retries after a random pause that grows with its
//     losses, up to 50 ms, at most 256 times, then fails with
//     [ErrContention], unless the call's Timeout ends it first (with
//     its deadline's error). 48 clients each winning 4 slots of one job
//     at once all won (TestJobKeyContention, under -race on 2 cores); in
//     three runs of that test set to 128 clients, 426, 432 and 443 of
//     the 512 claims were won (a client stops at its first failure; in
//     the third run every failure was the 10 s Timeout), against 331 and
//     340 in two runs with at most 64 turns. A
//     job's slots normally come one per tick; many at once come from
//     catch-up and backfill.
//
// Fencing (SPEC §6, "Fencing"): the fence of a won lease claim
// ([anarchon.ClaimOutcome].Fence, Run.Fence) is the revision of the KV
// write that won it — the Create of an absent run, or the compare-and-set
// Update of a takeover or of a renewal by the same token. A revision is
// the sequence number the bucket's stream gave that write, and every win
// of every job of the bucket is a write to that one stream, so a win's
// fence is larger than that of every win the stream stored before it (of
// any job, so the fences of one job have gaps). It needs no write of its
// own and is stored and replicated with the claim itself: it holds
// exactly where the claims do. With R3 a write is acknowledged once a
// majority has it and a new leader continues the stream's sequence, so
// the fence keeps its order through the loss or freeze of one node. With
// R1 a lost disk, a lost JetStream
// directory, a deleted and recreated bucket, or an OS crash inside the
// sync interval, take the stream's sequence back with the claims, and a
// later holder can get a fence an earlier holder still carries (SPEC §6,
// "Stores that forget"). A claim that failed after its write was stored
// (a timeout) answers an error and its fence is never handed out; the
// next win's fence is larger anyway. The RunStore/Fence subtests of the
// conformance suite pass against a real server, and TestFenceIsRevision
// checks that each kind of win answers the revision it wrote.
//
// Failover, as measured. What a server's failure costs was measured by
// the failover drill (faults.TestNATSCluster): three nats-server v2.14.10
// processes clustered on loopback, three instance processes, each with
// its own connection to all three servers (Options.Timeout 3 s, a ping
// every 1 s, two unanswered pings and the client moves on), running a
// plain job and a leased job every 1 s (lease 20 s, MaxLate 2 s); each
// fault held 8 s, 8 s apart, four faults per run. The R3 rows are six
// CI-mode runs of 2026-12-01 with the re-sends described under
// "Timeouts", on a 2-core machine shared with other tests (load average
// 11–26); the R1 rows were measured before them. A 5-minute soak with
// them (20 faults, 435 runs, load average 3.4 before, 7.4 after) had 0
// duplicates and 0 late starts, kills of the KV leader 4.3–6.7 s and
// freezes of it 5.8–8.1 s; RELIABILITY.md has it and the soaks before.
// "Delay" is the time from the fault to the first handler
// start of a slot due after it; "lost" counts the plain slots no instance
// ran near the fault (a claim that fails is not run: fail closed). A
// duplicate is a slot started twice with one attempt number, or completed
// by attempt n and n+1; a late start is one past MaxLate.
//
//	topology        fault (node led)                        delay        plain slots lost  duplicates  late starts
//	R3, 3 nodes     SIGKILL, KV stream leader (9)           3.8–5.2 s    2–3               0           0
//	R3, 3 nodes     SIGKILL, meta (+history) leader (3)     0.2–0.6 s    0                 0           0
//	R3, 3 nodes     SIGSTOP 8 s, KV stream leader (6)       5.5–7.0 s    4–5               0           0
//	R3, 3 nodes     SIGSTOP 8 s, another node (6)           0.06–1.0 s   0–1               0           0
//	R1 on 3 nodes   SIGKILL, the bucket's node (2)          9.3 s ¹      8 (one measured)  0           0
//	R1 on 3 nodes   SIGSTOP 8 s, the bucket's node (2)      8.0 s ¹      6 (one measured)  0           0
//	R1 on 3 nodes   SIGKILL or SIGSTOP, another node (4)    0.2–0.9 s    0 (two measured)  0           0
//	R1, 1 server    restart, 2 s down (faults.TestNATS)     under 1 s ²  slots while down  0           -
//
// ¹ Until the node was back: with one replica, claims stop for as long as
// its server is away, however long that is. ² After the restart;
// RELIABILITY.md has the soaks. The counts in parentheses are faults.
//
// With R3 the delay is the KV stream's election and little more. Its new
// leader was elected 3.7–7.0 s after the fault in these runs: nats-server's
// raft followers call an election 4–9 s (at random; v2.14 has no setting
// for it) after the last heartbeat of a leader that died or froze, and
// the first of the two followers wins. The store accepted the first claim
// 3–360 ms after the election (the claims that straddled it were sent
// again), and the first handler started 0.01–0.54 s after that: a won
// claim's history record is published before the handler starts, and
// when the history stream's leader died with the KV stream's, that
// publish meets no responders (nats.go tries it three times, 250 ms apart)
// and the handler starts without it. So does a leased one: its run is
// created and listed in the job key before the record is published, and
// a record that fails is a WARN, not a failed claim (a failed claim left
// a live run that no one worked, and the job's later slots were skipped
// as overlapping until its lease ended: 16 of 17 slots after one kill in
// the daemon drill, TestClaimWonHistoryRecordFails). A frozen history leader holds the
// record, and the start, until its stream's election or for a quarter
// of Options.Timeout, whichever comes sooner, and the record is sent
// again then (with the KV leader frozen too, the start came 6 ms–2.1 s
// after the claim); a copy the new leader dropped is sent again after
// another quarter (once, under load, a record waited out the whole
// Timeout before). The records of a batch (RecordClaims) are sent again
// on an election only: each asynchronous copy keeps an acknowledgement
// pending for a minute, and copies of a burst's records every few
// seconds would fill the pending limit the claims share. [Backend.History] reads through a pull consumer of
// one replica, which the stream may place on a server whose copy is
// behind the leader's (one resumed after a freeze) or that goes away
// mid-read: TestRecordClaimAcrossElection failed once with "no
// responders" in a CI run, and once read no record of the claim sent
// across the election in three runs beside it. A read that stops short asks the leader for the job's last
// record and, while that is not read yet, goes on from a new consumer
// every 250 ms until its deadline (Options.Timeout when the caller set
// none). A leader that was frozen and has just resumed takes itself for
// the leader until it hears of the new term, and answers the stream info
// from the copy it froze with: a History read in that moment can stop
// short of records its successor stored (TestRecordClaimAcrossElection
// read no record of a claim sent across the election so, once in CI; it
// now reads after the old leader is a current replica again). The scheduler's claims, heartbeats and finishes read no history. So a
// leader's loss costs up to 9 s plus about 0.5 s: the drill fails above
// 10 s, with about 0.5 s left for a loaded machine in the worst draw of
// the election timer, which no run came near. Before the re-sends, runs
// measured 4.2–10.4 s and the drill's bound was 12 s: a rebind after "no
// responders" held the backend's lock while it waited out Timeout, so
// every call queued behind it, and claims sent before the election
// waited out Timeout too (RELIABILITY.md, "Where the time after the
// election went"). Resuming a frozen follower makes it call an election
// at once (its timer ran out while it was stopped), about 0.5 s after it
// resumes; it cost at most one slot. With R1 the delay is the whole
// outage.
//
// Across the R3 runs the leased job lost 9–13 slots per run of four
// faults (claims that failed; none ran twice) and no run started past
// MaxLate. A leased run whose finish waits for a new leader holds its
// lease until the finish lands, so the job's next slots are skipped as
// overlapping meanwhile. A won plain claim whose history record is held
// past MaxLate is recorded missed rather than started late (the scheduler
// checks lateness again when a claim's answer is in, SPEC §3). A holder's
// lease must outlast the election plus its finish's timeout and back-off:
// with a 3 s lease, holders lost their leases while their finish waited
// and 2 slots completed twice in one run (attempt 1, then 2), and with
// 10 s one slot did in a 5-minute soak; the drill uses 20 s. Keep leases
// well above the store's failover time (about 15 s for a NATS cluster).
//
//	export $(bash scripts/services/nats.sh /tmp/anarchon-nats | xargs)
//	cd faults && go test -race -count=1 -run TestNATSCluster -v .
//	ANARCHON_NATS_DRILL_REPLICAS=1 go test -race -count=1 -run TestNATSCluster -v .  # R1
//	ANARCHON_SOAK=20m go test -race -count=1 -timeout 40m -run TestNATSCluster -v . # soak
//
// Batches ([Backend.ClaimBatch], [RunStore.ClaimRuns]) take the single
// claim's steps for all their claims at once, and answer each claim as a
// single claim would: the anarchontest Batch and RunBatch subtests pass
// against a real server, and TestClaimBatchRace races batches and single
// claims from 8 connections for 200 slots each of plain and lease claims
// with exactly one winner per slot. A batch's pause-state read is as far
// from its creates as a single claim's: one round trip. The batches of
// what follows a burst's claims ([RunStore.Heartbeats],
// [Backend.SaveResults], [RunStore.FinishResults]) take the single
// call's steps the same way, and a run whose compare-and-set lost to
// another writer takes the single path: the anarchontest HeartbeatBatch,
// ResultBatch and FinishBatch subtests pass against a real server, and
// TestRunBatchAnswersAsSingle finds the same answers and history after
// batches as after single calls (held, lost, released, finished and
// unknown runs, a run named twice in one batch, repeats, bad input), on
// the direct-get path and on the KV API.
//
// Errors a retry cannot fix are marked anarchon.Permanent ([IsPermanent]):
// bad input, a closed connection, a missing bucket or stream, refused
// credentials or permissions, JetStream API errors 400–404. Timeouts, no
// responders (a leader election), 5xx API errors and contention
// ([ErrContention]) are retried.
//
// The instance registry (SPEC §10, [Backend.RegisterInstance]) times a
// registration by its revision's server timestamp and judges records by a
// fresh read of the server's clock at each list. The anarchontest Registry
// subtests pass against nats-server.
//
// # Server requirements
//
// nats-server 2.10 or newer with JetStream enabled ("-js", or a
// "jetstream" block in the server configuration) and an account allowed to
// create one KV bucket and one stream, or bucket and stream made by an
// operator beforehand with the names in [Options]. KV Create and Update by
// revision, subject purge with keep and stream info with subject filters
// are older than 2.10; the "ts" server time stamp of API responses arrived
// with 2.10 (older servers fall back to a KV write whose stored time stamp
// is read back). No per-key TTL (2.11) or atomic batch feature is used.
// Tested with nats-server v2.14.10 and nats.go v1.53.1.
//
// # Setup
//
// For development, scripts/services/nats.sh builds a pinned nats-server
// with "go install" and starts it with JetStream on a free loopback port:
//
//	export $(bash scripts/services/nats.sh /tmp/anarchon-nats | xargs)
//	cd natsbackend && go test -race ./...
//
// The tests need ANARCHON_TEST_NATS_URL (they skip without it, and fail
// under CI=true); the restart test also needs
// ANARCHON_TEST_NATS_SERVER_BIN, the binary it starts its own servers
// from. Both are printed by the script.
//
// In production, give every instance the same [Options] (bucket, stream,
// subject and ClaimTTL) and a connection with reconnects enabled; a claim
// that fails while the connection is down is not run (the scheduler fails
// closed) and the next slot is claimed normally.
//
// # Performance
//
// A plain claim is two round trips in a row: a KV Get of the job's state
// (job control), then the KV Create; when the cached clock sample is
// stale (no decision in the last 2 s), the clock is read beside the Get.
// BenchmarkClaim measured it at 2.02–2.05× a bare KV Create with one
// claimer (loopback, nats-server v2.14.10, 2026-12-05, go1.26.8). Sending
// the Get beside the Create (54d1f5b; bench/HISTORY.md has its rows of
// §1) measured 1.26–1.27× in turn with it, and was not kept: a claim
// must then decide from a state read that the server may answer before
// or after it stores the Create, and two claims under one token (a
// repeat beside the first) can read the state on the two sides of a
// pause and answer the slot both won and paused (TestClaimPausedRaces
// fails so). Read first, the state decides what the Create writes, and
// every claim of the slot answers from the one key. A lease claim of a
// new slot waits for about three round trips in a row (its reads, its
// create, the job key's compare-and-set; "Round trips of a lease claim"
// below): on 2026-12-05 (go1.26.8) BenchmarkRunStoreClaim measured a won
// one at 0.89–1.03 ms, 5.4–6.0× a bare KV Create, where it waited for
// six in a row before (1.36–1.61 ms, 8.7–9.1×, the two run in turn,
// three times each), and a backup's claim of a live run at 221–251 µs
// (188–207 before: it now starts the two side reads and ends them).
// BENCHMARKS.md §1 measured a lease claim at 1.31 ms p50 with one claimer
// (9.3× the bare Create), and at 1.9 and 6.8 ms with 4 and 16 (11.0× and
// 12.7×; the claims of one job contend on its job key): the fewest lease
// claims a second of any store (561–688).
// History reads the job's subject of the history stream.
//
// A batch of plain claims ([Backend.ClaimBatch]) reads the pause states
// of all its jobs and the claim keys of all its slots with direct get
// requests asking for the last message of each key ("multi_last", up to
// 256 keys a request, nats-server 2.11 or newer; older servers, and
// buckets without direct gets, fall back to one KV Get per key, side by
// side), answers the slots already held from that read, publishes one
// create per other slot before it awaits any acknowledgement, and reads
// the holders of the slots it lost in one more request: about three
// round trips per batch, one request per new slot plus a few, and only
// the read for slots held (TestClaimBatchRequests counts them: 101 for
// 100 new slots of 100 jobs and 1 for the same batch repeated, where
// single claims send two per new slot and three per repeat). A batch of
// lease claims ([RunStore.ClaimRuns]) reads every run and pause state in one request
// and creates the absent runs the same way; the won creates of jobs with
// one slot in the batch are listed in their job keys together (one read
// of the keys, one of the runs they list, the compare-and-sets published
// before any acknowledgement is awaited; a key another writer changed
// meanwhile takes the single path's step); the claim records of those
// wins are then published together, beside one read of their lease ends
// (the revisions' server timestamps, for up to 256 runs); the rows of
// SPEC §6's table that write take the single path's steps, jobs side by
// side and the claims of one job in turn: 303 requests for 100 new slots
// of 100 jobs (402 while each win read its lease end alone, 501 before
// the job keys were batched), against 700 for single claims. The rows that only read are
// answered from the batch's reads: a run another instance holds on a
// live lease (running) or a settled run, found by the first read or by
// one more read of the runs whose creates lost, and the running ones
// checked listed in their job keys by one more read (listRunning), so
// that the losers of a burst send two reads per batch (each up to 256
// keys a request), not a request per slot (TestClaimBatchRequests: 2
// requests for 100 claims of runs held by another). BenchmarkClaimBatch
// measured a burst of 1,000 plain claims (1,000 jobs) at 25.9–31.2 ms as
// one batch against 333–348 ms as single claims (12.1–13.1×), 1.51–1.88×
// the 17.1–17.4 ms of 1,000 bare creates published before any
// acknowledgement is awaited; lease claims at 127–133 ms against
// 883–917 ms (6.8–7.2×). Loopback, nats-server v2.14.10, a 2-core
// machine at load average 2.01 (BENCHMARKS.md §1).
//
// A batch of heartbeats ([RunStore.Heartbeats]) reads every run in one
// direct get request and publishes the compare-and-set updates of the
// runs its tokens hold before it awaits any acknowledgement: about two
// round trips, as one Heartbeat, and one request per run plus one (101
// for 100 runs, where single heartbeats send 200). A batch of results
// ([Backend.SaveResults]) publishes every record the same way, then sends
// one purge request per job, each with its own reply subject, before it
// awaits any answer: two round trips, as one SaveResult, and one request
// per result plus one per job. A batch of finishes
// ([RunStore.FinishResults], the one-call finish
// [RunStore.FinishResult] for many runs) takes the heartbeat batch's two
// steps to finish the runs, then the result batch's two: about four
// round trips, as one FinishResult (its four requests in a row), and
// 3n+1 requests for n runs of n jobs, 2n+2 for n runs of one job
// (TestRunBatchRequests counts them all).
//
// # Storage
//
// One KV bucket ([Options.Bucket], default "anarchon") holds three kinds of
// key, each with a job name encoded as unpadded base64url of its UTF-8
// bytes (so dots, spaces, wildcards, quotes and any Unicode are safe in a
// subject, and names that differ only in case stay apart):
//
//   - "c.<job>.<slot>": a plain claim; its value holds the winner's token
//     and instance.
//   - "r.<job>.<slot>": a run under a lease; its value holds the state
//     (running, released, done, missed, skipped), token, holder, attempt,
//     lease length and final status.
//   - "j.<job>": the slots of the job that may still be running or
//     released, for the overlap check and [RunStore.Active].
//
// The instance registry (SPEC §10) adds one key per scheduler, "i.<id>",
// the instance ID encoded the same way; see [Backend.RegisterInstance].
//
// One stream ([Options.HistoryStream], subjects "<HistorySubject>.>")
// holds history: a claim record and a result record per run, published to
// "<HistorySubject>.<job>" (the job encoded as in the keys). The bucket
// and the stream are created by Init if absent, with file storage,
// [Options.Replicas] replicas and one value per key; a bucket made by
// someone else is used as it is, after checking its TTL (see Dedupe
// window). Init's error for a server without JetStream (no responders to
// its first request) says to enable it, and one for a port that accepts
// the connection but never greets it as a NATS server (a monitoring port)
// says to use the client port.
//
// A bucket or stream deleted under running instances, or lost with the
// server's JetStream directory, is created again: a call that meets a
// missing bucket or stream, or no responders, makes the next call bind
// again, and when that creates the bucket or the stream the backend logs
// an ERROR naming them. The new bucket is empty: claims of running slots
// are forgotten, a slot running then may run again, and Run.Attempt
// cannot fence that (SPEC §6, "Stores that forget").
//
// With [Options.MustExist] (for tools that only read) the backend never
// creates the bucket or the stream: a call that finds one missing fails
// with [ErrNoData].
//
// # Claims
//
// [Backend.Claim] is a KV Create of "c.<job>.<slot>": JetStream accepts the
// write only if the key has no value (an expected last sequence of 0 for
// the subject), so exactly one instance per slot gets it, whatever the
// number of clients (SPEC §4). A Create that loses reads the key and
// answers true only if the stored token is the caller's: a client that
// retries after a lost reply gets its win back (repeat safety).
//
// Before the Create, Claim reads the job's state (job control) and checks
// that the slot is not early by the server's clock (usually from the
// cached sample); see "Performance". It writes nothing else (but the
// history record of a slot it settles as paused). The backend is an
// anarchon.ClaimRecorder: the scheduler calls [Backend.RecordClaim] after
// a win, which publishes the claim record to history with Nats-Msg-Id
// "c.<token>" (the stream drops a repeat within its two-minute duplicate
// window); the wins of a burst's claim batch go in one
// [Backend.RecordClaims] call, their records published before any
// acknowledgement is awaited.
//
// # Dedupe window
//
// Claims are forgotten by the bucket's TTL: JetStream drops a key whose
// last write is older than the bucket's max age. [Backend.DedupeWindow] is
// therefore [Options.ClaimTTL], the TTL given to the bucket, by default 7
// days; with ClaimTTL set to anarchon.Forever the bucket has no TTL, claims
// are kept for good and DedupeWindow is Forever (the bucket then grows by
// one key per slot). A bucket TTL was chosen over a stream's duplicate
// window (Nats-Msg-Id) because the duplicate window keeps every message id
// in server memory and is meant for minutes, not days, and because a KV
// key also holds the token that repeat safety needs. Per-key TTLs
// (nats-server 2.11) are not used, so that every claim of a bucket is kept
// equally long. If the bucket already exists with a shorter TTL than
// ClaimTTL, Init fails with [ErrBucketMismatch] instead of promising a
// window the store does not keep. A longer TTL is accepted.
//
// History lives in its own stream, so trimming history never touches a
// claim and never reopens a slot.
//
// # Leases
//
// [RunStore.Claim] follows SPEC §6's table on the key "r.<job>.<slot>".
// Every decision reads the key and writes the new state with KV Create
// (absent key) or KV Update with the revision that was read; if another
// instance wrote in between, the write fails with a revision mismatch and
// the claim decides again on the new state, after a random pause that
// grows with each loss, up to 50 ms (at most 256 times, then
// [ErrContention], or the call's Timeout first). Heartbeat, Finish and Release are the same
// read-compare-update loop. [RunStore.FinishResult] is Finish, then
// SaveResult of the result (as lease_lost when the token no longer held
// the run).
//
// Times are the server's. A lease is not stored as an instant: the value
// holds its length, and it ends that long after the server timestamp of
// the revision that granted or renewed it (KeyValueEntry.Created, set by
// the server when it stored the message). A heartbeat is an Update that
// writes a new revision, so the server restamps the lease. The LeaseUntil
// a won claim returns is read back from the revision it wrote, so the
// holder and its backups see the same instant. Client wall clocks are
// never used, so instances with skewed clocks agree.
//
// A lease starts when the server stores the write that grants it, and a
// won claim answers only after the exchanges that follow that write (see
// the round trips below: up to four in a row with overlap refused). On a
// slow link the answer can come most of a lease after the lease began. A
// holder must therefore count its lease from when it sent the claim (or
// by the returned LeaseUntil and the store's clock), never from when the
// answer arrived; a backup wins once the server's clock reaches
// LeaseUntil, whenever the holder heard of its win.
//
// "Now", for lease expiry, for MaxLate and in [RunStore.Active], is the
// server's clock, judged through a cached sample with an explicit error
// bound:
//
//   - A sample is one read of the server clock ([Backend.ServerTime]: the
//     "ts" field the server puts in a stream info response for the
//     bucket's stream), sent at local monotonic time s and answered at r.
//     The server stamped it between s and r.
//   - At local monotonic time t the estimate is ts + (t − (s+r)/2), with
//     the error bound E = (r − s)/2 + (t − (s+r)/2)·10⁻³ + 1 ms: half the
//     round trip, a drift of 1 ms per second of age (twice the largest
//     slew NTP applies, so a server clock kept by NTP stays inside it),
//     and 1 ms for the millisecond rounding of stored lease lengths and of
//     MaxLate. Monotonic readings make steps of the local clock harmless.
//   - A sample is used for at most 2 s; the next decision that needs "now"
//     reads the clock again (so a busy backend reads it at most about once
//     per 2 s): the decisions that find the sample stale while that read
//     is under way wait for it and use its sample (TestStaleClockReadOnce:
//     50 at once send one request, 50 before). Every ServerTime call, including the scheduler's own
//     periodic offset reads, records its sample, and a sample replaces the
//     cached one only if its bound is tighter at that moment.
//   - A question "is the server's time past T?" is answered from the
//     cache only if T lies outside [estimate − E, estimate + E], where the
//     answer is the same for every server time inside the bound.
//     Otherwise the server clock is read at once (one round trip) and
//     decides. So every decision is the one the server's clock gives, on
//     the one assumption that the server's clock is not stepped (rather
//     than slewed) by more than E within the 2 s a sample lives.
//
// Round trips of a lease claim, with a fresh sample. A claim's first
// read is the run key's KV Get, with the job's state and its job key read
// beside it (two more KV Gets, side by side), whose answers only a claim
// that creates or lists a run waits for (if the side read fails, each
// key is read on its own when it is needed):
//
//   - a running run held by another token with a live lease (a backup's
//     claim): the run's Get;
//   - an absent run, overlap allowed (the first claim of a slot): the
//     three reads, then the KV Create of the run key with the job key's
//     probes (at most two listed runs) read beside it, then three
//     exchanges side by side — the job key's Update (a compare-and-set on
//     the revision the first read found), the claim record's publish, and
//     the read-back of the lease's time stamp — so the claim waits for
//     about three round trips in a row, whatever the number of the job's
//     unfinished runs;
//   - an absent run, overlap refused: the same, but the probes read every
//     listed slot (the list then holds only the job's unfinished runs,
//     normally one or none) and the claim record is published after the
//     Update, once the overlap check has passed: four in a row;
//   - a takeover: the Get, an Update of the run key, then the same three
//     exchanges side by side.
//
// A compare-and-set that loses (another claim wrote the run or the job
// key since the first read) reads again and decides again, one step at a
// time (TestRunStoreClaimRequests counts a claim's requests,
// BenchmarkRunStoreClaim times it).
//
// A decision near a lease's end or the MaxLate limit (within E), or a
// stale sample, adds one round trip for the clock; a stale sample found
// at a claim's first read is read again beside it.
//
// The overlap check uses "j.<job>". A new run is created as running first;
// then the slot is added to the job key by compare-and-set, and the same
// step checks that fewer than RunClaim.Limit other listed slots (one
// unless a Limit is given) hold live leases. That step also
// drops slots no longer running or released: with overlap refused it reads
// every listed slot; with overlap allowed it probes two listed slots at
// random, so a claim's cost does not grow with the list, and as each claim
// adds one slot and drops the settled slots it probes, the list stays
// within a small multiple of the job's unfinished runs. Of two
// instances starting different slots of a job at once, one commits first;
// the other sees it, counts it, and if that reaches the limit turns its
// new run into skipped and returns overlap. A
// crash between the two writes leaves a running run that is not listed:
// nobody runs its handler, its lease expires and the next claim of that
// slot takes it over and lists it. The job key ages out of the bucket like
// any key, ClaimTTL after its last write (each won run rewrites it): a run
// that lasts longer than ClaimTTL while no other slot of its job is won is
// no longer seen by the overlap check.
//
// # History
//
// [Backend.SaveResult] publishes the result and purges the job's subject
// down to its newest 2·historySize messages (one claim and one result per
// run), so at least historySize runs are kept and a claim is always
// trimmed before its result. [Backend.History] reads the subject with a
// pull consumer without acks (memory storage, deleted after the read or
// by the server after 5 s idle) and merges records with
// anarchon.BuildHistory; a record's ClaimedAt is its message's server
// timestamp. The history TTL is stored with each record and applied when
// reading, by the server's clock: records older than it are not returned
// (they leave the stream with the size trim).
//
// A read is bounded by what the stream held for the job when it began:
// one stream info request gives the subject's message count and the
// stream's last sequence, and History takes at most that many messages,
// none past that sequence, each stream sequence once, and stops when a
// fetch brings nothing new. Records saved meanwhile are not waited for,
// so a job that is written without pause cannot keep a read going. Every
// fetch and every message wait also watches the context: once it ends,
// History returns an error wrapping the context's error
// (context.DeadlineExceeded or context.Canceled), with the driver's error
// when there is one. The lease loops (claim, heartbeat, finish, release,
// Active) check the context before each server call in the same way.
//
// # Watches
//
// [Backend.WatchRuns] is a KV watch of "r.>" (updates only). It sends
// RunReleased when a run becomes released and RunFinished when it becomes
// done, missed or skipped, so standing-by instances claim again at once.
package natsbackend
