#!/usr/bin/env bash
# Starts a throw-away nats-server with JetStream for anarchon's natsbackend
# integration tests.
#
#   bash scripts/services/nats.sh <workdir>
#
# Builds nats-server from the Go module proxy (pinned below) the first time,
# caching the binary under $(go env GOPATH)/anarchon-tools, starts it on a
# free loopback port with its JetStream store and log under <workdir>, waits
# until it answers, writes its pid to <workdir>/nats.pid and prints only
# VAR=value lines to stdout:
#
#   ANARCHON_TEST_NATS_URL=nats://127.0.0.1:PORT
#   ANARCHON_TEST_NATS_SERVER_BIN=/path/to/nats-server
#   ANARCHON_TEST_NATS_MONITOR_URL=http://127.0.0.1:PORT
#
# The last is the server's HTTP monitoring endpoint (/varz), also on a free
# loopback port; the benchmark harness reads its message counters.
#
# Progress and errors go to stderr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NATS_SERVER_VERSION=v2.14.10

service_workdir nats "$@"

gopath=$(go env GOPATH)
bindir="${gopath%%:*}/anarchon-tools/nats-server@${NATS_SERVER_VERSION}"
bin="$bindir/nats-server"
if ! [ -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qF "$NATS_SERVER_VERSION"; then
	echo "building nats-server ${NATS_SERVER_VERSION} into $bindir" >&2
	mkdir -p "$bindir"
	GOBIN="$bindir" GOFLAGS=-mod=mod GOWORK=off \
		go install "github.com/nats-io/nats-server/v2@${NATS_SERVER_VERSION}" >&2
fi

pidfile="$workdir/nats.pid"
stop_pidfile "$pidfile"

mkdir -p "$workdir/js" "$workdir/nats-ports"
rm -f "$workdir"/nats-ports/*.ports
log="$workdir/nats.log"

# -p -1 and -m -1 let the kernel pick free ports; the server writes the
# ports it got to a .ports file in --ports_file_dir once it listens.
nohup "$bin" -js -sd "$workdir/js" -a 127.0.0.1 -p -1 -m -1 \
	--ports_file_dir "$workdir/nats-ports" -l "$log" \
	</dev/null >/dev/null 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

url=""
monitor=""
for _ in $(seq 1 200); do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "nats-server exited; see $log" >&2
		tail -n 20 "$log" >&2 || true
		exit 1
	fi
	pf=$(ls "$workdir"/nats-ports/*.ports 2>/dev/null | head -n 1 || true)
	if [ -n "$pf" ] && grep -q "Server is ready" "$log" 2>/dev/null; then
		url=$(grep -o 'nats://127\.0\.0\.1:[0-9]*' "$pf" | head -n 1 || true)
		monitor=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$pf" | head -n 1 || true)
		[ -n "$url" ] && break
	fi
	sleep 0.05
done
if [ -z "$url" ]; then
	echo "nats-server did not become ready; see $log" >&2
	exit 1
fi

# Check that it answers: the server greets every client with an INFO line.
port=${url##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port"
read -r -t 5 greeting <&3 || true
exec 3<&- 3>&-
case "$greeting" in
INFO*) ;;
*)
	echo "nats-server on port $port did not answer" >&2
	exit 1
	;;
esac

echo "ANARCHON_TEST_NATS_URL=$url"
echo "ANARCHON_TEST_NATS_SERVER_BIN=$bin"
if [ -n "$monitor" ]; then
	echo "ANARCHON_TEST_NATS_MONITOR_URL=$monitor"
fi
