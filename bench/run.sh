#!/usr/bin/env bash
# Runs one part of anarchon's benchmark harness and prints its Markdown
# tables (the tables in BENCHMARKS.md come from these commands).
#
#   bash bench/run.sh <part> [flags]
#
# Parts: claim, calls (claim's second table only), contest, failover (every store), timing, scale (memory
# store), gocron (Redis), burst (every store; its sizes come from
# ANARCHON_BENCH_BURST_JOBS, _COUNT, _EVERY, _PROCS, _SCALE and
# _SCALE_STORE, see bench/cmd/anarchonbench/burst.go). Flags go to the
# harness, e.g. -short for a quick smoke run or -stores memory,redis.
#
# The server stores the part measures (those -stores names, every one
# without it; the burst part's scaling store too) are started with
# scripts/services/<name>.sh under $ANARCHON_BENCH_WORKDIR (default: a
# directory under /tmp) unless their variable (ANARCHON_TEST_POSTGRES_URL,
# ANARCHON_TEST_MYSQL_DSN, ANARCHON_TEST_REDIS_ADDR, ANARCHON_TEST_NATS_URL)
# is already set, and stopped when the part ends, so that no idle server
# of one part shares the machine with the next; ANARCHON_BENCH_KEEP_SERVERS=1
# leaves them running (their pids are in <workdir>/<name>/<name>.pid). The burst
# part reads NATS's message counters from ANARCHON_TEST_NATS_MONITOR_URL,
# which scripts/services/nats.sh prints too; set it beside a preset
# ANARCHON_TEST_NATS_URL, or the NATS rows show only counted calls.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 claim|calls|contest|failover|timing|scale|gocron|burst [flags]" >&2
	exit 2
fi
part=$1
shift
case $part in
claim | calls | contest | failover | timing | scale | gocron | burst) ;;
*)
	echo "$0: unknown part \"$part\"; usage: $0 claim|calls|contest|failover|timing|scale|gocron|burst [flags]" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
workdir=${ANARCHON_BENCH_WORKDIR:-/tmp/anarchon-bench}
mkdir -p "$workdir"

# The -stores list of the flags ("-stores a,b" or "-stores=a,b", one or
# two dashes); every store when the flags have none.
stores=all
prev=
for arg in "$@"; do
	case $arg in
	-stores=* | --stores=*) stores=${arg#*=} ;;
	esac
	case $prev in
	-stores | --stores) stores=$arg ;;
	esac
	prev=$arg
done
# The burst part's scaling table runs on its own store (burst.go).
if [ "$part" = burst ] && [ "$stores" != all ] && [ -n "${ANARCHON_BENCH_BURST_SCALE-1,3,6}" ]; then
	scale=${ANARCHON_BENCH_BURST_SCALE_STORE:-redis/plain}
	stores="$stores,${scale%%/*}"
fi
wanted() { # wanted <store>: whether the part measures it
	[ "$stores" = all ] && return 0
	case ",$stores," in
	*",$1,"*) return 0 ;;
	esac
	return 1
}

# stop_pidfile (its log lines read "bench/run.sh: …").
# shellcheck source=scripts/services/lib.sh
. "$root/scripts/services/lib.sh"
name=bench/run
started=()
stop_started() {
	[ "${ANARCHON_BENCH_KEEP_SERVERS:-}" = 1 ] && return 0
	local s
	for s in "${started[@]}"; do
		stop_pidfile "$workdir/$s/$s.pid"
	done
}
trap stop_started EXIT

start() { # start <script> <variable>
	local name=$1 var=$2
	if [ -n "${!var:-}" ] || ! wanted "$name"; then
		return
	fi
	if [ ! -f "$root/scripts/services/$name.sh" ]; then
		echo "no scripts/services/$name.sh: $name rows are skipped" >&2
		return
	fi
	local out
	if ! out=$(bash "$root/scripts/services/$name.sh" "$workdir/$name"); then
		echo "starting $name failed: its rows are skipped" >&2
		return
	fi
	started+=("$name")
	while IFS= read -r line; do
		case $line in
		*=*) export "${line?}" ;;
		esac
	done <<<"$out"
}

case $part in
claim | calls | contest | failover | burst)
	start postgres ANARCHON_TEST_POSTGRES_URL
	start mysql ANARCHON_TEST_MYSQL_DSN
	start redis ANARCHON_TEST_REDIS_ADDR
	start nats ANARCHON_TEST_NATS_URL
	;;
gocron)
	start redis ANARCHON_TEST_REDIS_ADDR
	;;
esac

bin="$workdir/anarchonbench"
(cd "$root/bench" && go build -o "$bin" ./cmd/anarchonbench)
"$bin" "$part" -workdir "$workdir" "$@"
