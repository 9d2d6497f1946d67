#!/usr/bin/env bash
# build-envtest.sh builds the control-plane binaries that envtest needs (kube-apiserver, etcd and,
# with --with-kubectl, kubectl; with --with-node also kube-controller-manager, kube-scheduler, kubelet
# and kube-proxy for the local cluster) from the Go module proxy into bin/k8s/<version>-linux-amd64.
#
# Why: setup-envtest downloads its tarballs from a host that is unreachable here, while the Go module
# proxy is. k8s.io/kubernetes is not meant to be imported, so the build happens in a throwaway module
# that requires it and repeats its replace block (a dependency's replaces do not apply to its
# dependents), pointing each staging module at its published v0.x twin.
#
# The script is idempotent: a binary that already reports the pinned version is kept, so a warm run
# takes well under a second. It prints the directory to use as KUBEBUILDER_ASSETS on its last line.
# What it builds is kept once per machine too, in $PQCACHE_CACHE_DIR/k8s (default
# ~/.cache/pqcache/k8s), named by the versions and this script's hash: a fresh clone (CI's) links or
# copies those binaries instead of building them again.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.7.3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${ENVTEST_ASSETS_DIR:-$ROOT/bin/k8s/${K8S_VERSION}-linux-amd64}
WITH_KUBECTL=false
WITH_NODE=false
for arg in "$@"; do
  case "$arg" in
    --with-kubectl) WITH_KUBECTL=true ;;
    --with-node) WITH_NODE=true WITH_KUBECTL=true ;;
    *) echo "usage: $0 [--with-kubectl] [--with-node]" >&2; exit 2 ;;
  esac
done

log() { printf 'build-envtest: %s\n' "$*" >&2; }

# has_version BIN WANT: true when BIN exists and its --version output mentions WANT.
has_version() {
  [ -x "$1" ] && "$1" --version 2>/dev/null | grep -q -- "$2"
}

mkdir -p "$OUT"
cache=${PQCACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pqcache}/k8s/v${K8S_VERSION}-etcd${ETCD_VERSION}-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
# from_cache takes every binary the machine's cache has and OUT lacks (a hard link when they share a
# file system); to_cache gives the cache what OUT has and it lacks.
from_cache() {
  local f
  for f in "$cache"/*; do
    [ -x "$f" ] && [ ! -e "$OUT/${f##*/}" ] || continue
    ln "$f" "$OUT/${f##*/}" 2>/dev/null || cp "$f" "$OUT/${f##*/}"
  done
}
to_cache() {
  local f
  mkdir -p "$cache" 2>/dev/null || return 0
  for f in "$OUT"/*; do
    [ -x "$f" ] && [ ! -e "$cache/${f##*/}" ] || continue
    { ln "$f" "$cache/${f##*/}" 2>/dev/null || { cp "$f" "$cache/.${f##*/}.$$" && mv "$cache/.${f##*/}.$$" "$cache/${f##*/}"; }; } 2>/dev/null || true
  done
}
[ -d "$cache" ] && from_cache
need_k8s=()
has_version "$OUT/kube-apiserver" "v${K8S_VERSION}" || need_k8s+=(kube-apiserver)
if $WITH_KUBECTL; then
  # kubectl prints client and server versions; --client keeps it offline.
  { [ -x "$OUT/kubectl" ] && "$OUT/kubectl" version --client 2>/dev/null | grep -q "v${K8S_VERSION}"; } || need_k8s+=(kubectl)
fi
if $WITH_NODE; then
  for bin in kube-controller-manager kube-scheduler kubelet kube-proxy; do
    has_version "$OUT/$bin" "v${K8S_VERSION}" || need_k8s+=("$bin")
  done
fi

if [ ${#need_k8s[@]} -gt 0 ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  log "building ${need_k8s[*]} v${K8S_VERSION} from the Go module proxy (cold: ~20 min on 2 cores)"
  gomod=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@v${K8S_VERSION}"; exit 1; }
  # Each staging module in kubernetes' replace block ("k8s.io/api => ./staging/src/k8s.io/api")
  # is published as k8s.io/<name> v0.<minor>.<patch>.
  staging_version="v0.${K8S_VERSION#*.}"
  {
    echo "module pqcache.dev/envtest-build"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes v${K8S_VERSION}"
    echo
    sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => \./staging/src/.*#replace \1 => \1 '"$staging_version"'#p' "$gomod"
  } >"$work/go.mod"
  log "$(grep -c '^replace' "$work/go.mod") staging modules replaced with ${staging_version}"
  major=${K8S_VERSION%%.*}
  minor=${K8S_VERSION#*.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  # One go build for all of them: one action graph compiles the shared packages once and overlaps
  # one binary's link with the next one's compile.
  start=$(date +%s)
  pkgs=()
  for bin in "${need_k8s[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$bin"); done
  mkdir -p "$OUT/.build"
  (cd "$work" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$OUT/.build/" "${pkgs[@]}")
  for bin in "${need_k8s[@]}"; do mv "$OUT/.build/$bin" "$OUT/$bin"; done
  rmdir "$OUT/.build"
  log "built ${need_k8s[*]} in $(( $(date +%s) - start ))s"
fi

if ! has_version "$OUT/etcd" "${ETCD_VERSION}"; then
  work=$(mktemp -d)
  log "building etcd v${ETCD_VERSION} from the Go module proxy (cold: ~1 min)"
  start=$(date +%s)
  printf 'module pqcache.dev/etcd-build\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" >"$work/go.mod"
  (cd "$work" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  rm -rf "$work"
  log "built etcd in $(( $(date +%s) - start ))s"
fi

to_cache
log "$("$OUT/kube-apiserver" --version) | etcd $("$OUT/etcd" --version | sed -n 's/^etcd Version: //p')"
echo "$OUT"
