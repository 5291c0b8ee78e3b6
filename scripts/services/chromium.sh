#!/usr/bin/env bash
# Find (or install) a headless Chromium for anarchon's browser tests.
#
#   bash scripts/services/chromium.sh <workdir>
#
# Installs Debian's chromium-headless-shell package when no headless shell
# is found, and prints the one line to export:
#
#   ANARCHON_TEST_CHROME=/path/to/chromium-headless-shell
#
# Nothing is started: the tests start their own browser. <workdir> is
# accepted for the same calling convention as the other service scripts.
# Everything else goes to stderr.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
service_workdir chromium "$@"

# The binary itself first: Debian's /usr/bin/chromium-headless-shell is a
# shell script that runs it as a child, not by exec, so a test that ends
# the browser by killing the process it started would kill the script
# and leave the browser running, orphaned, after the test.
find_chrome() {
	for p in /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/chrome-headless-shell /usr/lib/chromium/headless_shell; do
		[ -x "$p" ] && { echo "$p"; return; }
	done
	for c in chromium-headless-shell chrome-headless-shell; do
		command -v "$c" 2>/dev/null && return
	done
	true
}

chrome=$(find_chrome)
if [ -z "$chrome" ]; then
	apt_install --no-install-recommends chromium-headless-shell
	chrome=$(find_chrome)
fi
[ -n "$chrome" ] || { log "chromium-headless-shell not found after install"; exit 1; }
log "using $chrome ($("$chrome" --version 2>/dev/null || echo 'version unknown'))"
echo "ANARCHON_TEST_CHROME=$chrome"
