#!/usr/bin/env bash
# Runs every test of every module in go.work, with the race detector, against
# real servers: each scripts/services/<name>.sh installs its server when it
# is absent, starts it on a loopback port and prints the variables that
# enable the integration tests. A variable already set in the environment
# wins, and its server is not started.
#
# Usage: bash scripts/test-all.sh [extra go test flags, e.g. -short]
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/anarchon-test.XXXXXX")
chmod 755 "$work"
cleanup() {
  for pidfile in "$work"/*.pid "$work"/*/*.pid; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

declare -A wants=([postgres]=ANARCHON_TEST_POSTGRES_URL [redis]=ANARCHON_TEST_REDIS_ADDR [nats]=ANARCHON_TEST_NATS_URL [mysql]=ANARCHON_TEST_MYSQL_DSN [chromium]=ANARCHON_TEST_CHROME)
for svc in postgres redis nats mysql chromium; do
  script="scripts/services/$svc.sh"
  [ -f "$script" ] || continue
  if [ -n "${!wants[$svc]:-}" ]; then
    echo "== $svc: using ${wants[$svc]} from the environment"
    continue
  fi
  echo "== starting $svc"
  if ! out=$(bash "$script" "$work/$svc"); then
    echo "FAIL: could not start $svc (see above)"
    exit 1
  fi
  while IFS= read -r line; do
    case "$line" in
      [A-Z_]*=*) export "${line?}"; echo "   ${line%%=*} set" ;;
    esac
  done <<<"$out"
done

if ! mods=$(go list -m -f '{{.Dir}}'); then
  echo "FAIL: go list -m could not read the workspace (go.work)"
  exit 1
fi
passed=0
failed=0
failures=()
for dir in $mods; do
  rel=${dir#"$root"}
  rel=${rel#/}
  echo "== go vet + go test -race ./... in ${rel:-.}"
  if ! (cd "$dir" && go vet ./...); then
    failed=$((failed + 1)); failures+=("vet ${rel:-.}")
  fi
  log="$work/test-$(echo "${rel:-root}" | tr '/' '_').log"
  (cd "$dir" && go test -race -count=1 -timeout 20m "$@" ./... 2>&1) | tee "$log"
  status=${PIPESTATUS[0]}
  ok=$(grep -cE '^ok ' "$log" || true)
  bad=$(grep -cE '^FAIL[[:space:]]' "$log" || true)
  passed=$((passed + ok))
  if [ "$status" -ne 0 ]; then
    [ "$bad" -gt 0 ] || bad=1
    failures+=("test ${rel:-.}")
  fi
  failed=$((failed + bad))
done

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "packages: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
