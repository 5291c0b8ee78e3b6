#!/usr/bin/env bash
# Start a throw-away redis-server for anarchon's integration tests.
#
#   bash scripts/services/redis.sh <workdir>
#
# Installs Debian's redis-server package when the binary is absent, starts the
# server in the background on a free loopback port (127.0.0.1 only, no
# persistence, data and log under <workdir>), waits until it answers PING,
# writes its pid to <workdir>/redis.pid and prints the one line to export:
#
#   ANARCHON_TEST_REDIS_ADDR=127.0.0.1:PORT
#
# Everything else goes to stderr. It never touches a system service: the
# package's own unit, if any, is left alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
service_workdir redis "$@"

find_server() {
	command -v redis-server 2>/dev/null || { [ -x /usr/bin/redis-server ] && echo /usr/bin/redis-server; } || true
}

server=$(find_server)
if [ -z "$server" ]; then
	apt_install --no-install-recommends redis-server
	server=$(find_server)
fi
[ -n "$server" ] || { log "redis-server not found after install"; exit 1; }

ping() {
	if command -v redis-cli >/dev/null 2>&1; then
		redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG
	else
		# RESP inline PING over bash's /dev/tcp.
		exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
		printf 'PING\r\n' >&3
		local reply
		read -r -t 1 reply <&3 || true
		exec 3>&- 3<&-
		[[ $reply == +PONG* ]]
	fi
}

pidfile=$workdir/redis.pid
# A server this script started earlier in the same workdir is reused.
if [ -s "$pidfile" ] && [ -s "$workdir/redis.port" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	port=$(cat "$workdir/redis.port")
	if ping "$port"; then
		echo "ANARCHON_TEST_REDIS_ADDR=127.0.0.1:$port"
		exit 0
	fi
fi

for attempt in 1 2 3 4 5; do
	port=$(low_port)
	rm -f "$pidfile"
	"$server" --bind 127.0.0.1 --port "$port" \
		--protected-mode yes \
		--save "" --appendonly no \
		--dir "$workdir" \
		--logfile "$workdir/redis.log" \
		--pidfile "$pidfile" \
		--daemonize yes >&2 || true
	for _ in $(seq 1 100); do
		if ping "$port"; then
			for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.05; done
			echo "$port" >"$workdir/redis.port"
			log "redis-server $("$server" --version | awk '{print $3}') on 127.0.0.1:$port (pid $(cat "$pidfile"))"
			echo "ANARCHON_TEST_REDIS_ADDR=127.0.0.1:$port"
			exit 0
		fi
		sleep 0.1
	done
	log "attempt $attempt: redis-server did not answer on port $port; see $workdir/redis.log"
done
exit 1
