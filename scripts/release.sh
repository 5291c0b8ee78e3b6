#!/usr/bin/env bash
# Builds the daemon's release archives: a static binary (CGO_ENABLED=0,
# -trimpath) for linux, darwin and windows on amd64 and arm64, each in
# anarchon_VERSION_GOOS_GOARCH.tar.gz (.zip for windows) with the LICENSE
# and the daemon's README, and SHA256SUMS over the archives. The version is
# linked into the binary (anarchon --version).
#
# Usage: bash scripts/release.sh VERSION OUTDIR
#        bash scripts/release.sh --snapshot OUTDIR   (version v0.0.0-snapshot+COMMIT;
#                                                     CI checks the archives this way)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ $# -ne 2 ]; then
  echo "usage: bash scripts/release.sh VERSION|--snapshot OUTDIR" >&2
  exit 2
fi
version=$1
out=$2
snapshot=false
if [ "$version" = --snapshot ]; then
  snapshot=true
  version="v0.0.0-snapshot+$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi
case "$version" in v[0-9]*) ;; *) echo "FAIL: version $version does not start with v<digit>" >&2; exit 2 ;; esac
if ! $snapshot && [ -n "$(git status --porcelain)" ]; then
  echo "FAIL: the working tree has changes; a release is built from a clean tag" >&2
  exit 1
fi
# Build with the patched Go release the workspace names (go.work's
# toolchain line, downloaded from the module proxy), as the release is
# built and govulncheck checks, whatever go command runs this script.
toolchain=$(awk '$1 == "toolchain" { print $2; exit }' go.work)
[ -z "$toolchain" ] || export GOTOOLCHAIN=$toolchain
if ! command -v zip >/dev/null; then
  echo "== installing zip (the windows archives)"
  { apt-get update -qq && apt-get install -y -qq zip >/dev/null; } || { echo "FAIL: zip is missing and could not be installed" >&2; exit 1; }
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/anarchon-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT
start=$SECONDS
archives=()
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
  goos=${target%/*} goarch=${target#*/}
  name="anarchon_${version#v}_${goos}_${goarch}"
  name=${name//+/_}
  dir="$stage/$name"
  mkdir -p "$dir"
  exe=anarchon
  [ "$goos" = windows ] && exe=anarchon.exe
  (cd cmd/anarchon && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch \
    go build -trimpath -ldflags "-s -w -X main.buildVersion=$version" -o "$dir/$exe" .)
  cp LICENSE "$dir/LICENSE"
  cp cmd/anarchon/README.md "$dir/README.md"
  if [ "$goos" = windows ]; then
    (cd "$stage" && rm -f "$out/$name.zip" && zip -qr -X "$out/$name.zip" "$name")
    archives+=("$name.zip")
  else
    tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name --mtime='2000-01-01 00:00:00Z' \
      -czf "$out/$name.tar.gz" "$name"
    archives+=("$name.tar.gz")
  fi
  echo "   $target: ${archives[-1]}"
done
(cd "$out" && sha256sum "${archives[@]}" >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)

# The native archive's binary must print the version it was given.
native="$(go env GOOS)/$(go env GOARCH)"
case "$native" in linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64)
  check="$stage/check"
  mkdir -p "$check"
  name="anarchon_${version#v}_$(go env GOOS)_$(go env GOARCH)"
  tar -C "$check" -xzf "$out/${name//+/_}.tar.gz"
  got=$("$check"/*/anarchon --version)
  if [ "${got%% go*}" != "anarchon $version" ]; then # "anarchon VERSION GOVERSION OS/ARCH"
    echo "FAIL: the $native binary prints \"$got\", want \"anarchon $version\"" >&2
    exit 1
  fi
  echo "   $native binary: $got"
  ;;
esac
echo "release: ${#archives[@]} archives and SHA256SUMS in $out ($((SECONDS - start))s)"
