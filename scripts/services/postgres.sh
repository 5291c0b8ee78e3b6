#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server for anarchon's pgbackend
# integration tests.
#
#   bash scripts/services/postgres.sh <workdir>
#
# Uses Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres),
# installing the "postgresql" package with apt-get when they are absent.
# PostgreSQL refuses to run as root, so the server runs as the system user
# anarchon-pg (created if missing). The cluster lives in <workdir>/postgres
# (or, when that user cannot enter <workdir>, in a directory under /tmp that
# <workdir>/postgres links to), listens on 127.0.0.1 only, on a free port,
# with fsync off for speed. The script waits until the server answers,
# creates the database "anarchon" and the password-authenticated role
# "anarchon", writes the server's pid to <workdir>/postgres.pid and prints
# only VAR=value lines to stdout:
#
#   ANARCHON_TEST_POSTGRES_URL=postgres://anarchon:anarchon@127.0.0.1:PORT/anarchon?sslmode=disable
#
# Re-running it stops the previous server of <workdir> and starts it again
# on the same data. Progress and errors go to stderr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
service_workdir postgres "$@"
pguser=anarchon-pg
role=anarchon
password=anarchon # a test-only server on loopback
dbname=anarchon

find_bindir() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

bindir=$(find_bindir || true)
if [ -z "$bindir" ]; then
	apt_install postgresql
	bindir=$(find_bindir)
fi
log "using PostgreSQL binaries in $bindir"

# Run a command as the server's user when we are root.
as_pg() {
	if [ "$(id -u)" -ne 0 ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u "$pguser" -- "$@"
	else
		su -s /bin/sh "$pguser" -c "$(printf '%q ' "$@")"
	fi
}

if [ "$(id -u)" -eq 0 ] && ! id "$pguser" >/dev/null 2>&1; then
	log "creating system user $pguser"
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$pguser" >&2 ||
		adduser --system --no-create-home --group "$pguser" >&2
fi

datadir="$workdir/postgres"
if [ ! -e "$datadir" ]; then
	if [ "$(id -u)" -eq 0 ] && ! as_pg test -x "$workdir"; then
		# The server's user cannot enter workdir (e.g. it is under /root).
		real=$(mktemp -d /tmp/anarchon-pg.XXXXXX)
		ln -s "$real" "$datadir"
	else
		mkdir -p "$datadir"
	fi
fi
datadir=$(cd "$datadir" && pwd -P)
[ "$(id -u)" -eq 0 ] && chown "$pguser" "$datadir"
chmod 700 "$datadir"
pgdata="$datadir/data"
pidfile="$workdir/postgres.pid"
logfile="$datadir/postgres.log"

# Stop a server this workdir started before.
if [ -f "$pgdata/postmaster.pid" ]; then
	log "stopping the previous server"
	as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >&2 || true
fi

if [ ! -s "$pgdata/PG_VERSION" ]; then
	log "initdb in $pgdata"
	pwfile="$datadir/pwfile"
	printf '%s\n' "$password" >"$pwfile"
	[ "$(id -u)" -eq 0 ] && chown "$pguser" "$pwfile"
	as_pg "$bindir/initdb" -D "$pgdata" -U "$role" --pwfile="$pwfile" \
		--auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >&2 ||
		as_pg "$bindir/initdb" -D "$pgdata" -U "$role" --pwfile="$pwfile" \
			--auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C >&2
	rm -f "$pwfile"
fi

# pg_stat_statements counts the statements clients send, for the burst
# benchmark; preloaded only where the server has it.
preload=""
if [ -f "$bindir/../lib/pg_stat_statements.so" ]; then
	preload="-c shared_preload_libraries=pg_stat_statements"
fi

started=""
for _ in $(seq 1 20); do
	port=$(low_port) || break # the fault harness restarts it on the same port
	if as_pg "$bindir/pg_ctl" -D "$pgdata" -l "$logfile" -w -t 60 start -o \
		"-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$datadir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=500 $preload" >&2; then
		started=yes
		break
	fi
	log "start on port $port failed; trying another port"
	tail -n 5 "$logfile" >&2 || true
done
if [ -z "$started" ]; then
	log "the server did not start; see $logfile"
	exit 1
fi
head -n 1 "$pgdata/postmaster.pid" >"$pidfile"

psqlbin="$bindir/psql"
[ -x "$psqlbin" ] || psqlbin=$(command -v psql || true)
if [ -z "$psqlbin" ]; then
	log "psql not found"
	exit 1
fi
export PGPASSWORD="$password"
psql=("$psqlbin" -X -q -h 127.0.0.1 -p "$port" -U "$role")
for _ in $(seq 1 100); do
	"${psql[@]}" -d postgres -tAc 'SELECT 1' >/dev/null 2>&1 && break
	sleep 0.1
done
if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$dbname'")" != 1 ]; then
	"${psql[@]}" -d postgres -c "CREATE DATABASE $dbname" >&2
fi

echo "ANARCHON_TEST_POSTGRES_URL=postgres://$role:$password@127.0.0.1:$port/$dbname?sslmode=disable"
