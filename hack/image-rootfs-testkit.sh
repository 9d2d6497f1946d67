#!/usr/bin/env bash
# image-rootfs-testkit.sh assembles in DIR the file system of the test kit image
# (pqcache.local/pqcache-testkit:dev, which the local cluster loads for the e2e suite): the
# pqcache-testkit binary (test/cmd/pqcache-testkit: the tests' S3 servers and probes, kept out of the
# shipped pqcache binary) at /usr/local/bin, the shared libraries it links (the embedded DuckDB needs
# libstdc++), and /etc/passwd and /etc/group with the nonroot user 65532.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: image-rootfs-testkit.sh DIR}
rm -rf "$OUT"
mkdir -p "$OUT/usr/local/bin" "$OUT/tmp"
chmod 1777 "$OUT/tmp"
(cd "$ROOT" && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w" -o "$OUT/usr/local/bin/pqcache-testkit" ./test/cmd/pqcache-testkit)
ldd "$OUT/usr/local/bin/pqcache-testkit" | awk '/=>/ {print $3} $1 ~ /ld-linux/ {print $1}' | sort -u | while read -r lib; do
  [ -n "$lib" ] && [ -e "$lib" ] || continue
  mkdir -p "$OUT$(dirname "$lib")"
  cp -L "$lib" "$OUT$lib"
done
mkdir -p "$OUT/etc"
echo 'root:x:0:0:root:/root:/sbin/nologin' >"$OUT/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >>"$OUT/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/etc/group"
echo "image-rootfs-testkit: $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1) in $OUT" >&2
