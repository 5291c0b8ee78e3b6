# Shared by the scripts/services/*.sh scripts (sourced, not run): their
# calling convention and the steps they have in common.

# service_workdir NAME ARGS...: checks that the script got one argument,
# <workdir>, creates it and sets $workdir to its absolute path and $name
# to NAME (the prefix of log lines).
service_workdir() {
	name=$1
	shift
	if [ $# -ne 1 ]; then
		echo "usage: $name.sh <workdir>" >&2
		exit 2
	fi
	mkdir -p "$1"
	workdir=$(cd "$1" && pwd)
}

# log MESSAGE...: a progress line on stderr (stdout carries only the
# VAR=value lines).
log() { echo "$name.sh: $*" >&2; }

# apt_install APT-GET-INSTALL-ARGS...: installs Debian packages, running
# apt-get update first only when the package lists are stale.
apt_install() {
	log "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y "$@" >&2; then
		apt-get update >&2
		apt-get install -y "$@" >&2
	fi
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# low_port: prints a port nothing listens on, below the kernel's ephemeral
# range (32768 and up by default), so that no client connection can hold
# it while the server is down for a restart on the same port (the fault
# harness restarts servers so).
low_port() {
	local port
	for _ in $(seq 1 50); do
		port=$((20000 + RANDOM % 12000))
		if port_free "$port"; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# stop_pidfile PIDFILE: stops the process PIDFILE names, if it runs, and
# waits up to 10 s for it to exit.
stop_pidfile() {
	local pid
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	kill -0 "$pid" 2>/dev/null || return 0
	log "stopping the server of $1 (pid $pid)"
	kill "$pid" || true
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
}
