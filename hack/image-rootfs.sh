#!/usr/bin/env bash
# image-rootfs.sh assembles in DIR (default bin/rootfs) the file system the Dockerfile's image has: the
# pqcache binary at /usr/local/bin/pqcache, DuckDB's tpch and httpfs extensions beside it under
# /usr/local/lib/pqcache, the shared libraries it links (found with ldd, as the
# distroless/cc base provides them), CA certificates, and /etc/passwd and /etc/group with the nonroot
# user 65532. No Docker engine runs here, so this is how tests check that the binary needs nothing else.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/bin/rootfs}
VERSION=${VERSION:-dev}
rm -rf "$OUT"
mkdir -p "$OUT/usr/local/bin" "$OUT/etc/ssl/certs" "$OUT/tmp"
chmod 1777 "$OUT/tmp"
(cd "$ROOT" && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X github.com/pqcache/pqcache/internal/version.Version=$VERSION" -o "$OUT/usr/local/bin/pqcache" ./cmd/pqcache)
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/pqcache/pqcache/internal/version.Version=$VERSION" -o "$OUT/usr/local/bin/pqcache-runner" ./cmd/pqcache)
mkdir -p "$OUT/usr/local/lib/pqcache"
(cd "$ROOT" && go run ./hack/tpch-extension "$OUT/usr/local/lib/pqcache/tpch.duckdb_extension")
# DuckDB's httpfs, for s3:// inputs: from the PyPI wheel pinned with its hash.
"$ROOT/hack/install-httpfs.sh" "$ROOT/bin/httpfs.duckdb_extension"
cp "$ROOT/bin/httpfs.duckdb_extension" "$OUT/usr/local/lib/pqcache/httpfs.duckdb_extension"
# Shared libraries of the binary and of the httpfs extension, at the paths the dynamic loader looks for
# them.
{ ldd "$OUT/usr/local/bin/pqcache"; ldd "$OUT/usr/local/lib/pqcache/httpfs.duckdb_extension"; } | awk '/=>/ {print $3} $1 ~ /ld-linux/ {print $1}' | sort -u | while read -r lib; do
  [ -n "$lib" ] && [ -e "$lib" ] || continue
  mkdir -p "$OUT$(dirname "$lib")"
  cp -L "$lib" "$OUT$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$OUT/etc/ssl/certs/" 2>/dev/null || true
echo 'root:x:0:0:root:/root:/sbin/nologin' >"$OUT/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >>"$OUT/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/etc/group"
echo "image-rootfs: $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1) in $OUT" >&2
