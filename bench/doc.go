// Package bench is anarchon's benchmark harness: it measures the claim
// path against each store's bare atomic operation, contested claims,
// handler start lateness, scale, failover and a side-by-side run with
// gocron. It lives in its own module so that the libraries it compares
// against never become dependencies of anarchon.
//
// The command cmd/anarchonbench runs the measurements and prints Markdown
// tables; bench/run.sh starts the servers and runs one part. The results
// and the command behind each table are in BENCHMARKS.md at the
// repository root. Nothing here runs in a plain `go test ./...`: the
// measurements are a program, and the testing.B benchmarks run only with
// -bench.
//
// # Sections
//
// Claim cost ([MeasureClaims], [CountRoundTrips]): the raw operation
// ([RawClaimer]: a mutex-guarded map insert for memory, INSERT … ON
// CONFLICT DO NOTHING for SQLite and PostgreSQL, SET NX PX for Redis, KV
// Create for NATS) against Backend.Claim and RunStore.Claim, interleaved
// in rounds in one run, at several concurrencies; and backend calls per
// won slot on the full run path, counted through [Wrap].
//
// Contested claims ([Contest]): N instances, each on its own connection,
// claim every slot at once; every slot must have exactly one winner.
//
// Timing ([TimerLateness], [SchedulerLateness]): how late handlers start
// after their slot on the memory store, against Go's own timers to the
// same deadlines.
//
// Scale ([MeasureLoad], [MeasureJobMemory]): CPU and RSS of one instance
// with many jobs, heap per registered job, and CPU per fired slot against
// the number of registered jobs. [NullBackend] separates the scheduler's
// own cost from the store's.
//
// Failover ([Failover]): the time from a holder's crash or hand-over to a
// backup's handler start, with the store's Watcher or with it hidden.
//
// Bursts ([BurstInstance], [BurstTimers], [MergeBursts]): K jobs on one
// schedule (jitter 0, no-op handlers) in several processes on one store
// ([JoinStore]), beside Go timers to the same deadlines in as many
// processes: start lateness per burst, duplicates and misses from a ledger
// of handler starts, CPU per process, backend calls counted through
// [Wrap], and the server's own count of work ([Store].Ops: PostgreSQL
// transactions from pg_stat_database, MySQL's Questions, Redis INFO
// commandstats, NATS /varz in_msgs when ANARCHON_TEST_NATS_MONITOR_URL is
// set).
//
// gocron ([Duplicates], [MeasureRedisLoad]): gocron v2 with a Redis lock
// ([RedisLocker]) beside anarchon on Redis: CPU and RSS, and duplicate
// runs with staggered instances and a skewed clock ([OffsetClock]).
//
// # Stores
//
// [OpenStore] opens "memory", "sqlite" (a file under the work directory),
// and, when their variables are set, "postgres"
// (ANARCHON_TEST_POSTGRES_URL), "mysql" (ANARCHON_TEST_MYSQL_DSN, MySQL or
// MariaDB; its raw operation is INSERT IGNORE), "redis" (ANARCHON_TEST_REDIS_ADDR) and
// "nats" (ANARCHON_TEST_NATS_URL), the variables of anarchon's
// integration tests, printed by scripts/services/<name>.sh. Each run uses
// fresh table prefixes, key prefixes or buckets.
package bench
