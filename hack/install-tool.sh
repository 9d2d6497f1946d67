#!/usr/bin/env bash
# install-tool.sh NAME PACKAGE VERSION installs a Go tool at a pinned version into bin/, as
# bin/NAME-VERSION with bin/NAME linking to it, so that a version bump in the Makefile rebuilds the tool
# and an unchanged version costs nothing. Everything comes from the Go module proxy.
set -euo pipefail
name=$1 pkg=$2 version=$3
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/bin
target=$BIN/$name-$version
if [ -x "$target" ]; then
  ln -sf "$name-$version" "$BIN/$name"
  exit 0
fi
mkdir -p "$BIN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "install-tool: building $pkg@$version" >&2
GOBIN=$tmp GOFLAGS= go install "$pkg@$version"
mv "$tmp/$(basename "${pkg%%/v[0-9]*}")" "$target" 2>/dev/null || mv "$tmp"/* "$target"
ln -sf "$name-$version" "$BIN/$name"
echo "install-tool: $name $version ready in $(( $(date +%s) - start ))s" >&2
