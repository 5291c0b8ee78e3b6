#!/usr/bin/env bash
# gofmt, go vet and staticcheck over every module of go.work. staticcheck is
# installed from the Go module proxy at a pinned version when absent.
set -uo pipefail
cd "$(dirname "$0")/.."
version=v0.8.2
bin=$(go env GOPATH)/bin/staticcheck
if ! [ -x "$bin" ] || ! "$bin" -version 2>/dev/null | grep -q "(${version#v})"; then
  echo "== installing staticcheck $version"
  if ! GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$version"; then
    echo "WARNING: staticcheck $version could not be installed; running gofmt and go vet only"
    bin=true
  fi
fi
status=0
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; status=1
fi
for dir in $(go list -m -f '{{.Dir}}'); do
  echo "== vet + staticcheck ${dir#"$PWD"/}"
  (cd "$dir" && go vet ./... && "$bin" ./...) || status=1
done
exit $status
