#!/usr/bin/env bash
# govulncheck over every module of go.work; fails on a vulnerability the
# code reaches (govulncheck exits 3), in a module or in the standard
# library of the toolchain the go.work toolchain line names.
#
# The database is https://vuln.go.dev when it answers; otherwise (CI here
# reaches only the Go module proxy) it is the OSV files of the
# golang.org/x/vulndb module (its data/osv directory, one GO-….json per
# report), which govulncheck reads as a directory of entries with
# -db file://DIR. VULNDB_VERSION pins that module version (default: latest),
# so the report is as fresh as the module.
#
# Usage: bash scripts/vulncheck.sh
set -uo pipefail
cd "$(dirname "$0")/.."
version=v1.9.0 # golang.org/x/vuln
bin=$(go env GOPATH)/bin/govulncheck
if ! [ -x "$bin" ] || ! "$bin" -version 2>/dev/null | grep -q "govulncheck@$version"; then
  echo "== installing govulncheck $version"
  GOFLAGS= go install "golang.org/x/vuln/cmd/govulncheck@$version" || { echo "FAIL: could not install govulncheck"; exit 1; }
fi

# The standard library checked is that of the go command govulncheck runs:
# use the patched release the workspace names, downloaded from the proxy.
toolchain=$(awk '$1 == "toolchain" { print $2; exit }' go.work)
if [ -n "$toolchain" ]; then
  export GOTOOLCHAIN=$toolchain
fi
echo "== $(go version)"

if curl -fsS -m 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null; then
  db=https://vuln.go.dev
else
  mod=$(GOFLAGS= go mod download -json "golang.org/x/vulndb@${VULNDB_VERSION:-latest}") || { echo "FAIL: could not download golang.org/x/vulndb"; exit 1; }
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$mod")
  ver=$(sed -n 's/^[[:space:]]*"Version": "\(.*\)",$/\1/p' <<<"$mod")
  if ! [ -d "$dir/data/osv" ] || [ "$(ls "$dir/data/osv" | wc -l)" -lt 1000 ]; then
    echo "FAIL: golang.org/x/vulndb@$ver has no data/osv directory of reports"
    exit 1
  fi
  db=file://$dir/data/osv
  echo "== vuln.go.dev unreachable: database from golang.org/x/vulndb@$ver ($(ls "$dir/data/osv" | wc -l) reports)"
fi

status=0
for dir in $(go list -m -f '{{.Dir}}'); do
  echo "== govulncheck ${dir#"$PWD"/}"
  (cd "$dir" && "$bin" -db "$db" ./...)
  rc=$?
  if [ $rc -ne 0 ]; then
    status=1
    [ $rc -eq 3 ] || echo "FAIL: govulncheck exited $rc"
  fi
done
exit $status
