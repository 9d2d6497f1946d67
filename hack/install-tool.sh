#!/usr/bin/env bash
# install-tool.sh NAME PACKAGE VERSION installs a Go tool at a pinned version into bin/, as
# bin/NAME-VERSION with bin/NAME linking to it, so that a version bump in the Makefile rebuilds the tool
# and an unchanged version costs nothing. Everything comes from the Go module proxy. A PACKAGE starting
# with ./ is a wrapper module in this repository whose go.mod names the wrapped module in a
# "// tool: MODULE" line; its pinned version must equal VERSION.
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
if [[ $pkg == ./* ]]; then
  # A small wrapper module inside this repository (hack/goaws): its go.mod pins the tool, and must pin
  # the version the Makefile names.
  mod=$(sed -n 's/^module //p' "$ROOT/$pkg/go.mod")
  pinned=$(cd "$ROOT/$pkg" && go list -m -f '{{.Version}}' "$(sed -n "s|^// tool: ||p" go.mod)")
  if [ "$pinned" != "$version" ]; then
    echo "install-tool: $pkg/go.mod pins $pinned, the Makefile asks for $version; make them agree" >&2
    exit 1
  fi
  (cd "$ROOT/$pkg" && go build -mod=readonly -o "$tmp/$name" .)
  mv "$tmp/$name" "$target"
  echo "install-tool: built $mod" >&2
else
  # Static and trimmed, as the images want them: the local cluster's versitygw image copies
  # bin/versitygw-VERSION instead of building it again.
  GOBIN=$tmp GOFLAGS= CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "$pkg@$version"
  mv "$tmp/$(basename "${pkg%%/v[0-9]*}")" "$target" 2>/dev/null || mv "$tmp"/* "$target"
fi
ln -sf "$name-$version" "$BIN/$name"
echo "install-tool: $name $version ready in $(( $(date +%s) - start ))s" >&2
