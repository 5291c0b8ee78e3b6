// Package faults injects faults into running anarchon instances and checks
// that nothing was run twice and nothing was lost.
//
// The tests of this module start several instance processes (the program
// in cmd/instance, one anarchon.Scheduler each) against one store —
// SQLite, PostgreSQL, MariaDB/MySQL, Redis or NATS JetStream — and, while they run,
// SIGKILL them (the holder of a leased run above all, in the middle of the
// run), restart the store server, delay, cut or black-hole their
// connections through a TCP [Proxy] in front of each instance, run
// every instance with its clock set up to ±5 s off, and step one
// instance's clock by +30 s, −30 s, +1 h and −1 h in turn while it runs
// (clock_step: the instance reads a new offset from a file on SIGUSR1). Afterwards [Check]
// reads the [Ledger] the instances wrote and the store's history.
//
// # Ledger
//
// Every handler appends a "start" line when it starts and an "end" line
// when it returns, to one file shared by all instances: JSON, one line per
// write(2), file opened with O_APPEND, so a SIGKILL leaves whole lines and
// concurrent writers never interleave ([Entry], [Ledger], [ReadLedger]).
// Times are the host clock in Unix microseconds. Every store in these tests
// runs on the same host, so the host clock is the store's clock; each line
// also carries the instance's skewed clock and its estimate of the store
// offset, so the estimate's error is measured too.
//
// # Invariants
//
// [Check] reports a violation when:
//
//   - a slot of the plain-claim job runs twice, or has two history records;
//   - a slot of the leased job is completed twice, unless the first holder
//     completed and then was killed or lost the store before its Finish
//     could be recorded (a rerun: leases give at-least-once, and Run.Attempt
//     is the fencing number for that case), or is settled twice in history;
//   - a leased slot due while instances were alive and the store reachable
//     is never settled (success, error, missed, skipped or abandoned);
//   - a backup's attempt starts before the previous attempt's handler
//     returned (or before its process was killed): fencing by the lease;
//   - a run starts before its slot by the store's clock, beyond
//     [Spec.Tolerance];
//   - a run starts on an instance while its store is unreachable (fail
//     closed), or no run starts within [Spec.RecoveryBound] after a
//     store-wide outage;
//   - an instance whose clock stepped (clock_step) does not estimate the
//     store's clock right again (within [Spec.StepSettle]) within one
//     clock sync ([Spec.ClockSync]) of the step, or of the step back.
//
// A [Report] gives the figures: slots, runs, faults by kind, duplicates,
// losses, overlaps, reruns, the longest recovery.
//
// # Store failover
//
// TestNATSCluster is the drill for a replicated store: it starts three
// clustered nats-servers (JetStream, their own store directories, cluster
// routes on loopback), an R3 bucket and stream, and three instance
// processes running a 1 s plain job and a 1 s leased job (MaxLate 2 s).
// While they run it SIGKILLs the KV stream's leader and, once the cluster
// is healthy again, the meta leader (each started again after 8 s), then
// SIGSTOPs the stream leader and a node leading neither stream for 8 s
// each ([FaultNodeKill], [FaultNodeStop]). [Check] then also counts a
// leased slot started twice with one attempt number, starts past
// [Spec.MaxLate], plain slots nobody ran, and the delay from each node
// fault to the next start; leased slots due during a node fault whose
// claims failed are counted, not violations. It fails on a duplicate of
// either kind, a start past MaxLate or a delay above 10 s (nats-server
// calls an election 4–9 s after a leader dies), and reports beside each
// delay when the KV stream had a leader again and when the store
// accepted its first claim after the fault. It needs
// ANARCHON_TEST_NATS_SERVER_BIN; ANARCHON_NATS_DRILL_REPLICAS=1 runs it on
// the unsafe topology (one replica on the cluster) for the record, and
// ANARCHON_SOAK repeats its fault cycle for that long.
//
// TestPostgresFailoverSync is the drill for a PostgreSQL primary with a
// synchronous standby (SIGKILL of the primary, pg_ctl promote), and
// TestSentinelFailoverDrill and TestClusterFailoverDrill those for Redis
// (a primary, two replicas and three Sentinels with WAIT 1; three
// masters and three replicas): every store's failover drill and the
// launchers of its servers live in this module.
//
// The daemon failover drills (TestDaemonFailoverNATS, …Sentinel,
// …Cluster, …Postgres) start the same four topologies with the same
// launchers (the Cluster with two replicas per master and WAIT 1, its
// safe topology), three `anarchon run` processes (cmd/anarchon, built
// once) on the store URL form of each (nats://a,b,c?replicas=3,
// redis+sentinel://…?master=…&wait=1, redis://a,b,c?cluster=true&wait=1,
// postgres://…@p,s/…?target_session_attrs=read-write), and a YAML job
// file whose two jobs run every second and append to a ledger from the
// shell; the leader or primary is SIGKILLed mid-run, and [Check] reads
// the ledger and `anarchon history --json`. Where the daemon sets
// ANARCHON_FENCE (not empty, not 0), each slot's later holders must carry
// a larger fence, and no two starts of a job may share one. The shell
// stamps a start after the daemon's lateness check, by the fork and exec
// of sh and date(1): a start counts as past MaxLate only beyond
// [Spec.Spawn] (200 ms) more.
//
// # Running
//
// Plain `go test -race ./...` is the bounded CI mode: about a minute per
// store. SQLite always runs; the others need the server variables
// ANARCHON_TEST_POSTGRES_URL, ANARCHON_TEST_MYSQL_DSN,
// ANARCHON_TEST_REDIS_ADDR and ANARCHON_TEST_NATS_URL (printed by scripts/services/<name>.sh) and are
// skipped without them, or fail when CI=true. The tests start servers of
// their own from the same binaries, on other loopback ports, so that they
// can restart them. ANARCHON_SOAK=20m turns a run into a soak of that
// length; ANARCHON_FAULTS_REPORT=<dir> appends each report to
// <dir>/<store>.txt; ANARCHON_FAULTS_KEEP=<dir> keeps the ledgers and
// instance logs there.
package faults
