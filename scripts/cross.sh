#!/usr/bin/env bash
# Builds and vets every module of go.work (tests included, through vet) for
# each platform anarchon supports, with CGO_ENABLED=0 as the release
# binaries are built. Platform-specific code (the daemon's process groups)
# must compile everywhere. -trimpath, as scripts/release.sh builds, so the
# release archives that CI builds next reuse these compiled packages.
#
# Usage: bash scripts/cross.sh [GOOS/GOARCH ...]
set -uo pipefail
cd "$(dirname "$0")/.."
# Build with the patched Go release the workspace names (go.work's
# toolchain line, downloaded from the module proxy), as the release is
# built and govulncheck checks, whatever go command runs this script.
toolchain=$(awk '$1 == "toolchain" { print $2; exit }' go.work)
[ -z "$toolchain" ] || export GOTOOLCHAIN=$toolchain
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
# The modules users build: the published ones (scripts/release-proxy.sh).
# The development modules (faults, bench, deploy, tools, the browser tests)
# drive Linux servers and a Linux browser and are built on Linux only;
# CROSS_ALL=1 builds them for every target too.
if [ "${CROSS_ALL:-}" = 1 ]; then
  mods=$(go list -m -f '{{.Dir}}') || { echo "FAIL: go list -m"; exit 1; }
else
  mods=$(grep -E '^published=' scripts/release-proxy.sh | sed -E 's/^published=\((.*)\)/\1/' | tr ' ' '\n' | sed "s|^|$PWD/|; s|/\.$||")
fi
failures=()
for target in "${targets[@]}"; do
  t0=$SECONDS
  for dir in $mods; do
    rel=${dir#"$PWD"}; rel=${rel#/}
    if ! (cd "$dir" && CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build -trimpath ./... &&
      CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go vet -trimpath ./...); then
      failures+=("$target ${rel:-.}")
    fi
  done
  echo "== $target: go build + go vet of $(echo $mods | wc -w) modules ($((SECONDS - t0))s)"
done
if [ ${#failures[@]} -gt 0 ]; then
  echo "FAIL: ${failures[*]}"
  exit 1
fi
echo "cross: ok"
