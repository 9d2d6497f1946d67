#!/usr/bin/env bash
# krew-release.sh VERSION URL_BASE OUT: builds kubectl-pqcache for each platform krew installs on
# (KREW_PLATFORMS, default linux and darwin on amd64 and arm64; not windows: the report it writes
# shares bench's Unix process code), packs each as
# OUT/kubectl-pqcache_VERSION_OS_ARCH.tar.gz, and writes OUT/pqcache.yaml, the krew manifest, with
# each archive's URL (URL_BASE/NAME) and sha256. Publish the archives at URL_BASE, then the manifest
# in a krew index (or install it straight: kubectl krew install --manifest=OUT/pqcache.yaml).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 VERSION URL_BASE OUT" >&2; exit 2; }
version=$1 base=${2%/} out=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
platforms=${KREW_PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}
mkdir -p "$out"
stages=$(mktemp -d)
trap 'rm -rf "$stages"' EXIT
entries=""
for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  bin=kubectl-pqcache
  [ "$os" = windows ] && bin=kubectl-pqcache.exe
  stage=$stages/$os-$arch
  mkdir -p "$stage"
  (cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w" -o "$stage/$bin" ./cmd/kubectl-pqcache)
  archive=kubectl-pqcache_${version}_${os}_${arch}.tar.gz
  # Reproducible: sorted, zero times, root-owned.
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -czf "$out/$archive" "$bin"
  rm -rf "$stage"
  sum=$(sha256sum "$out/$archive" | cut -d' ' -f1)
  entries+="  - selector:
      matchLabels: {os: $os, arch: $arch}
    uri: $base/$archive
    sha256: $sum
    bin: $bin
"
done
awk -v version="$version" -v entries="$entries" '
  /^PLATFORMS$/ { printf "%s", entries; next }
  { gsub(/VERSION/, version); print }
' "$root/hack/krew/pqcache.yaml.tmpl" >"$out/pqcache.yaml"
echo "wrote $out/pqcache.yaml and $(echo $platforms | wc -w) archives"
