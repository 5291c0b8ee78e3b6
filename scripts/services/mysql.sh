#!/usr/bin/env bash
# Starts a throw-away MariaDB (or MySQL) server for anarchon's mysqlbackend
# integration tests.
#
#   bash scripts/services/mysql.sh <workdir>
#
# Uses Debian's server binaries (mariadbd or mysqld, mariadb-install-db or
# mysql_install_db), installing the "mariadb-server" package with apt-get
# when they are absent. The server gets its own data directory,
# <workdir>/data, listens on 127.0.0.1 only, on a free port, with a socket
# in <workdir>, and runs in the background (not as a daemon) as root, with
# --user=root. The script waits until the server answers, creates the
# database "anarchon" and the user "anarchon" (password "anarchon") with
# all rights on it, writes the server's pid to <workdir>/mysql.pid and
# prints only VAR=value lines to stdout:
#
#   ANARCHON_TEST_MYSQL_DSN=anarchon:anarchon@tcp(127.0.0.1:PORT)/anarchon
#
# Re-running it stops the previous server of <workdir> and starts it again
# on the same data. Progress and errors go to stderr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
service_workdir mysql "$@"
user=anarchon
password=anarchon # a test-only server on loopback
dbname=anarchon

find_bin() {
	local b
	for b in "$@"; do
		if command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
		if [ -x "/usr/sbin/$b" ]; then
			echo "/usr/sbin/$b"
			return 0
		fi
	done
	return 1
}

server=$(find_bin mariadbd mysqld || true)
if [ -z "$server" ]; then
	apt_install mariadb-server
	server=$(find_bin mariadbd mysqld)
fi
installdb=$(find_bin mariadb-install-db mysql_install_db)
client=$(find_bin mariadb mysql)
log "using $server"

datadir="$workdir/data"
pidfile="$workdir/mysql.pid"
sock="$workdir/mysql.sock"
logfile="$workdir/mysql.log"

stop_pidfile "$pidfile" # a server this workdir started before
rm -f "$pidfile"

runas=()
[ "$(id -u)" -eq 0 ] && runas=(--user=root)

if [ ! -d "$datadir/mysql" ]; then
	log "creating the data directory $datadir"
	"$installdb" --no-defaults --datadir="$datadir" "${runas[@]}" \
		--auth-root-authentication-method=normal --skip-test-db >&2
fi

started=""
for _ in $(seq 1 20); do
	port=$(low_port) || break # the fault harness restarts it on the same port
	# --no-defaults: no /etc/mysql settings (a system socket, a port).
	"$server" --no-defaults --datadir="$datadir" "${runas[@]}" \
		--bind-address=127.0.0.1 --port="$port" --socket="$sock" \
		--pid-file="$workdir/mysqld.pid.server" --log-error="$logfile" \
		--innodb-flush-log-at-trx-commit=2 --max-connections=500 \
		--skip-name-resolve >/dev/null 2>&1 &
	pid=$!
	echo "$pid" >"$pidfile"
	for _ in $(seq 1 300); do
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		if "$client" --no-defaults -uroot --socket="$sock" -e 'SELECT 1' >/dev/null 2>&1; then
			started=yes
			break
		fi
		sleep 0.1
	done
	[ -n "$started" ] && break
	log "start on port $port failed; trying another port"
	kill "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	tail -n 5 "$logfile" >&2 || true
done
if [ -z "$started" ]; then
	log "the server did not start; see $logfile"
	exit 1
fi

"$client" --no-defaults -uroot --socket="$sock" >&2 <<SQL
CREATE DATABASE IF NOT EXISTS $dbname CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$user'@'127.0.0.1' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$password';
GRANT ALL ON $dbname.* TO '$user'@'127.0.0.1';
GRANT ALL ON $dbname.* TO '$user'@'localhost';
SQL

echo "ANARCHON_TEST_MYSQL_DSN=$user:$password@tcp(127.0.0.1:$port)/$dbname"
