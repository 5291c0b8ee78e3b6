#!/usr/bin/env bash
# Measures every table of BENCHMARKS.md in one sitting, one part after
# another in the order its introduction gives, and writes each part's
# output to a file of its own:
#
#   bash bench/sitting.sh <outdir>
#
# Each file (<outdir>/NN-<part>.md) starts with the part's command, the
# commit of the tree it ran on, the UTC time it started and the machine's
# load average then, and ends with the time it ended and its exit status;
# the part's stderr goes beside it (NN-<part>.err). A part that fails
# does not stop the sitting: its file says so, and the script exits 1 at
# the end. Run it with nothing else on the machine: the parts measure
# lateness and CPU time, which other work moves.
#
# The bench/run.sh parts start and stop their own servers. The go test
# benchmarks of the backends (§1's batch tables) get a PostgreSQL, Redis
# and NATS server started here with scripts/services/*.sh for their
# group, under $ANARCHON_BENCH_WORKDIR/sitting (default: a directory
# under /tmp), stopped when the group ends. ANARCHON_SITTING_PARTS, a
# comma-separated list of part names, runs only those; the parts, in
# order: burst-bench (§9), burst-1000, burst-10000 (§8), claim (§1),
# contest (§2), batch-postgres, batch-sqlite, batch-redis, batch-nats,
# result-batch-sqlite (§1's batch tables), timing (§3), scale (§4),
# dashboard (§7), failover (§5), gocron (§6).
#
# A whole sitting took about 80 minutes on a machine with 2 CPUs.
set -uo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 <outdir>" >&2
	exit 2
fi
parts=burst-bench,burst-1000,burst-10000,claim,contest,batch-postgres,batch-sqlite,batch-redis,batch-nats,result-batch-sqlite,timing,scale,dashboard,failover,gocron
if [ -n "${ANARCHON_SITTING_PARTS:-}" ]; then
	IFS=, read -ra asked <<<"$ANARCHON_SITTING_PARTS"
	for p in "${asked[@]}"; do
		case ",$parts," in
		*",$p,"*) ;;
		*)
			echo "$0: ANARCHON_SITTING_PARTS names an unknown part \"$p\"; the parts: $parts" >&2
			exit 2
			;;
		esac
	done
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
workdir=${ANARCHON_BENCH_WORKDIR:-/tmp/anarchon-bench}/sitting
mkdir -p "$workdir"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then
	commit="$commit (with uncommitted changes)"
fi

# shellcheck source=scripts/services/lib.sh
. "$root/scripts/services/lib.sh"
name=bench/sitting
servers=()
stop_servers() {
	local s
	for s in "${servers[@]}"; do
		stop_pidfile "$workdir/$s/$s.pid"
	done
	servers=()
	unset ANARCHON_TEST_POSTGRES_URL ANARCHON_TEST_REDIS_ADDR ANARCHON_TEST_NATS_URL ANARCHON_TEST_NATS_MONITOR_URL
}
trap stop_servers EXIT

# servers_up NAME...: starts those services for the go test benchmarks
# and exports the variables their scripts print.
servers_up() {
	local s line lines
	for s in "$@"; do
		if ! lines=$(bash "$root/scripts/services/$s.sh" "$workdir/$s"); then
			log "starting $s failed"
			return 1
		fi
		servers+=("$s")
		while IFS= read -r line; do
			case $line in
			*=*) export "${line?}" ;;
			esac
		done <<<"$lines"
	done
}

failed=0
n=0
# part NAME DIR COMMAND...: runs COMMAND in $root/DIR unless
# ANARCHON_SITTING_PARTS leaves NAME out.
part() {
	local pname=$1 dir=$2
	shift 2
	n=$((n + 1))
	if [ -n "${ANARCHON_SITTING_PARTS:-}" ]; then
		case ",$ANARCHON_SITTING_PARTS," in
		*",$pname,"*) ;;
		*) return 0 ;;
		esac
	fi
	local file
	file=$(printf '%s/%02d-%s' "$out" "$n" "$pname")
	{
		echo "<!-- part $pname: (cd $dir && $(printf '%q ' "$@")) -->"
		echo "<!-- commit $commit; started $(date -u '+%Y-%m-%d %H:%M:%S UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg) -->"
	} >"$file.md"
	log "$pname: started"
	local rc=0
	(cd "$root/$dir" && "$@") >>"$file.md" 2>"$file.err" || rc=$?
	echo "<!-- ended $(date -u '+%Y-%m-%d %H:%M:%S UTC'); exit status $rc -->" >>"$file.md"
	if [ "$rc" -ne 0 ]; then
		log "$pname: failed (exit status $rc), see $file.err"
		failed=1
	fi
}

env_part() { # env_part NAME DIR VAR=value... -- COMMAND...: part with an environment
	local pname=$1 dir=$2
	shift 2
	local vars=()
	while [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	part "$pname" "$dir" env "${vars[@]}" "$@"
}

# §9, then §8 at K = 1,000 (with the scaling table) and K = 10,000.
part burst-bench . go test -run '^$' -bench BenchmarkBurst -benchtime 10x -count 3 -benchmem .
env_part burst-1000 . ANARCHON_BENCH_BURST_JOBS=1000 ANARCHON_BENCH_BURST_COUNT=3 ANARCHON_BENCH_BURST_EVERY=5s -- \
	bash bench/run.sh burst -stores memory,redis,postgres,sqlite,nats
env_part burst-10000 . ANARCHON_BENCH_BURST_JOBS=10000 ANARCHON_BENCH_BURST_COUNT=3 ANARCHON_BENCH_BURST_EVERY=15s ANARCHON_BENCH_BURST_SCALE= -- \
	bash bench/run.sh burst -stores memory,redis,postgres,sqlite,nats
# §1 (with its store-calls table) and §2.
part claim . bash bench/run.sh claim
part contest . bash bench/run.sh contest
# §1's batch tables: the backends' own benchmarks against servers
# started for them.
if [ -z "${ANARCHON_SITTING_PARTS:-}" ] || [[ ",$ANARCHON_SITTING_PARTS," == *,batch-* ]]; then
	servers_up postgres redis nats || failed=1
fi
part batch-postgres pgbackend go test -run '^$' -bench 'ClaimBatch$|ClaimRunsBatch$|ClaimRunsHistory' -benchtime 50x -count 2 .
part batch-sqlite sqlitefile go test -run '^$' -bench 'ClaimBatch$|ClaimRunsBatch$|ClaimRunsHistory' -benchtime 50x -count 2 .
part batch-redis redisbackend go test -run '^$' -bench 'ClaimBatch$' -benchtime 20x -count 2 .
part batch-nats natsbackend go test -run '^$' -bench 'ClaimBatch$' -benchtime 20x -count 2 .
part result-batch-sqlite sqlitefile go test -run '^$' -bench 'ResultBatch$' -benchtime 20x -count 3 .
stop_servers
# §3, §4, §7, §5, §6.
part timing . bash bench/run.sh timing
part scale . bash bench/run.sh scale
part dashboard anarchonui go test -run '^$' -bench JobPage10k -benchtime 20x -count 3 .
part failover . bash bench/run.sh failover
part gocron . bash bench/run.sh gocron

log "done: $out"
exit "$failed"
