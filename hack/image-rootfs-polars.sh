#!/usr/bin/env bash
# image-rootfs-polars.sh assembles in DIR (default bin/rootfs-polars) the file system of pqcache's Polars
# engine image (Dockerfile.polars): Node.js at /usr/bin/node with the shared libraries it and the
# nodejs-polars native module link, pqcache's Polars program (bench/polars: run.js and its modules,
# installed with `npm ci` from the committed lockfile) at /usr/local/lib/pqcache/polars, CA
# certificates, and the nonroot user 65532. No pqcache binary: BenchRun Jobs inject the static runner,
# which finds the program at /usr/local/lib/pqcache/polars and node at /usr/bin/node.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/bin/rootfs-polars}
NODE=${NODE:-/usr/bin/node}
rm -rf "$OUT"
mkdir -p "$OUT/usr/bin" "$OUT/usr/local/lib/pqcache/polars" "$OUT/etc/ssl/certs" "$OUT/tmp"
chmod 1777 "$OUT/tmp"
cp -L "$NODE" "$OUT/usr/bin/node"
# The program, and its modules exactly as the lockfile pins them.
make -s -C "$ROOT" polars-modules >&2
for f in run.js queries.js tables.js format.js package.json package-lock.json; do
  cp "$ROOT/bench/polars/$f" "$OUT/usr/local/lib/pqcache/polars/"
done
cp -a "$ROOT/bench/polars/node_modules" "$OUT/usr/local/lib/pqcache/polars/"
# Shared libraries of node and of the native module, at the paths the dynamic loader looks for them.
native=$(find "$OUT/usr/local/lib/pqcache/polars/node_modules" -name '*.node' | head -1)
{ ldd "$NODE"; ldd "$native"; } | awk '/=>/ {print $3} $1 ~ /ld-linux/ {print $1}' | sort -u | while read -r lib; do
  [ -n "$lib" ] && [ -e "$lib" ] || continue
  mkdir -p "$OUT$(dirname "$lib")"
  cp -L "$lib" "$OUT$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$OUT/etc/ssl/certs/" 2>/dev/null || true
echo 'root:x:0:0:root:/root:/sbin/nologin' >"$OUT/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >>"$OUT/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/etc/group"
echo "image-rootfs-polars: $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1) in $OUT" >&2
