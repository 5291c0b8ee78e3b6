#!/usr/bin/env bash
# Checks that the published modules work as a stranger gets them: builds a
# file-system module proxy holding every published module of the working
# tree at the release version (tools/cmd/modproxy refuses a go.mod with a
# replace directive or a sibling required at another version), then, in an
# empty directory outside the workspace, with GOPROXY=file://PROXY ahead of
# the module cache and the public proxy:
#   - go install github.com/anarchon/anarchon/cmd/anarchon@VERSION, and
#     anarchon --version must print VERSION (then the Go release and platform);
#   - go get github.com/anarchon/anarchon/pgbackend@VERSION in a new module
#     and go build of a small program that opens a pgbackend store.
# The anarchon modules are left out of the checksum database (GONOSUMDB):
# they are not published yet. A temporary module cache keeps these
# unpublished zips out of the real one; third-party modules are read from
# the real cache's download directory first, so a warm machine needs no
# network.
#
# With RELEASE_PROXY_DIR=DIR the proxy is written to DIR and kept, for a
# go mod tidy of a sub-module outside the workspace (RELEASING.md).
#
# Usage: bash scripts/release-proxy.sh [VERSION]   (default: the version the
# modules require each other at, from cmd/anarchon/go.mod)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
published=(. sqlitefile pgbackend mysqlbackend redisbackend natsbackend anarchonui otelanarchon cmd/anarchon)
version=${1:-$(awk '$1 == "github.com/anarchon/anarchon" { print $2; exit }' cmd/anarchon/go.mod)}
[ -n "$version" ] || { echo "FAIL: no release version"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/anarchon-release-proxy.XXXXXX")
cleanup() {
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

echo "== module proxy of the working tree at $version"
(cd tools && go build -o "$work/modproxy" ./cmd/modproxy)
proxy=${RELEASE_PROXY_DIR:-$work/proxy}
"$work/modproxy" -version "$version" -out "$proxy" "${published[@]}"

cache=$(go env GOMODCACHE)
# -trimpath keeps the build cache valid across the temporary module caches.
export GOWORK=off GOFLAGS="-mod=mod -trimpath" GOTOOLCHAIN=${GOTOOLCHAIN_RELEASE:-local}
export GOPROXY="file://$proxy,file://$cache/cache/download,https://proxy.golang.org"
# GOPRIVATE and GONOPROXY stay empty: either would send the anarchon
# modules around the file proxy.
export GONOSUMDB=github.com/anarchon/anarchon GOPRIVATE= GONOPROXY=
export GOMODCACHE="$work/modcache" GOPATH="$work/gopath" GOBIN="$work/bin"

echo "== go install github.com/anarchon/anarchon/cmd/anarchon@$version (empty directory)"
mkdir "$work/empty"
(cd "$work/empty" && go install "github.com/anarchon/anarchon/cmd/anarchon@$version")
got=$("$work/bin/anarchon" --version)
if [ "${got%% go*}" != "anarchon $version" ]; then # "anarchon VERSION GOVERSION OS/ARCH"
  echo "FAIL: anarchon --version printed \"$got\", want \"anarchon $version\""
  exit 1
fi
echo "   anarchon --version: $got"

echo "== go get github.com/anarchon/anarchon/pgbackend@$version + go build of a program using it"
mkdir "$work/user"
cd "$work/user"
go mod init example.com/user >/dev/null 2>&1
cat >main.go <<'GO'
// Command user opens a PostgreSQL store and schedules one job, as the
// pgbackend documentation shows.
package main

import (
	"context"
	"log"
	"os"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/pgbackend"
)

func main() {
	ctx := context.Background()
	b, err := pgbackend.Open(ctx, os.Getenv("DATABASE_URL"), nil)
	if err != nil {
		log.Fatal(err)
	}
	s := anarchon.New(b, nil)
	if err := s.Cron("hello", "* * * * *", func(context.Context, *anarchon.Run) error { return nil }, nil); err != nil {
		log.Fatal(err)
	}
}
GO
go get "github.com/anarchon/anarchon/pgbackend@$version"
go mod tidy
go build -o "$work/user-bin" .
grep -q "github.com/anarchon/anarchon/pgbackend $version" go.mod || { echo "FAIL: go.mod does not require pgbackend $version"; cat go.mod; exit 1; }
go version -m "$work/user-bin" | grep -E "dep\s+github.com/anarchon/anarchon(/pgbackend)?\s+$version" >/dev/null || { echo "FAIL: the binary does not carry the anarchon modules at $version"; go version -m "$work/user-bin"; exit 1; }
echo "   built; it links:"
go version -m "$work/user-bin" | grep -E "github.com/(anarchon|jackc)" | sed 's/^/   /'
echo "release-proxy: ok ($((SECONDS - start))s)"
