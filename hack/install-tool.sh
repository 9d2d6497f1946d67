#!/usr/bin/env bash
# install-tool.sh NAME PACKAGE VERSION installs a Go tool at a pinned version into bin/, as
# bin/NAME-VERSION with bin/NAME linking to it, so that a version bump in the Makefile rebuilds the tool
# and an unchanged version costs nothing. Everything comes from the Go module proxy. A PACKAGE starting
# with ./ is a wrapper module in this repository whose go.mod names the wrapped module in a
# "// tool: MODULE" line; its pinned version must equal VERSION.
#
# A build is kept once per machine too, in $PQCACHE_CACHE_DIR/tools (default ~/.cache/pqcache/tools),
# named by the tool, its version and, for a wrapper module, a hash of its files: a fresh
# clone (CI's) copies what an earlier checkout built instead of building it again.
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
cache=${PQCACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pqcache}/tools
cached=$cache/$name-$version
if [[ $pkg == ./* ]]; then
  cached+=-$(cat "$ROOT/$pkg"/go.mod "$ROOT/$pkg"/go.sum "$ROOT/$pkg"/*.go 2>/dev/null | sha256sum | cut -c1-12)
fi
if [ -x "$cached" ] && cp "$cached" "$target.tmp" && mv "$target.tmp" "$target"; then
  ln -sf "$name-$version" "$BIN/$name"
  echo "install-tool: $name $version copied from $cache" >&2
  exit 0
fi
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
# Into the machine's cache for the next checkout; a cache that cannot be written only costs a build.
if mkdir -p "$cache" 2>/dev/null && cp "$target" "$cached.tmp.$$" 2>/dev/null; then
  mv "$cached.tmp.$$" "$cached"
fi
echo "install-tool: $name $version ready in $(( $(date +%s) - start ))s" >&2
