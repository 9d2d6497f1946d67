#!/usr/bin/env bash
# sync-memory.sh: peak memory of a sync of one 8 GiB object at --part-size 1Mi (8,192 pieces), with
# peak RSS split into anonymous and file-backed (hack/bench/rss, sampled every 50 ms), for the
# binary a sync Job runs (bin/pqcache, DuckDB linked) and the static one (bin/pqcache-runner). The
# object is written straight into versitygw's posix root by hack/bench/s3gen, with its ETag and
# CRC64NVME: it is fetched in 1 MiB ranges, each checked into the combined CRC64NVME.
# Target: peak RSS under 64 MiB + parallelism × 256 KiB. Prints Markdown.
# Usage: hack/bench/sync-memory.sh [WORKDIR]   (default /tmp/pqcache-bench-mem; ~17 GB of disk)
set -euo pipefail
WORK=${1:-/tmp/pqcache-bench-mem}
SIZE=${SIZE:-8589934592}
PARALLEL=${PARALLEL:-8}
S3_PORT=${S3_PORT:-7173}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
build_tools
rm -rf "$WORK"
mkdir -p "$WORK"
start_s3 "$WORK/s3"
"$AWS" --endpoint-url "$S3" s3 mb s3://mem >/dev/null
log "writing one object of $SIZE bytes"
bin/s3gen -root "$WORK/s3" -bucket mem -n 1 -size "$SIZE" -workers 1 2>&1 | tail -1 >&2
settle
out=$WORK/table.md
{
  echo "One object of $((SIZE >> 30)) GiB, --part-size 1Mi, --parallel $PARALLEL (target: peak RSS under $((64 + PARALLEL / 4)) MiB), versitygw v1.8.0 on 127.0.0.1, $(date -u +%F)."
  echo
  echo "| binary | wall | CPU (user+sys) | peak RSS | anonymous | file-backed | GETs | load |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$out"
for bin in pqcache pqcache-runner; do
  log "$bin"
  bin/rss -o "$WORK/rss" -- "bin/$bin" sync s3://mem/ "$WORK/cache-$bin" --endpoint "$S3" --path-style \
    --parallel "$PARALLEL" --part-size 1Mi --progress none --json >"$WORK/r.json" 2>"$WORK/$bin.log"
  read -r wall user sys rss anon file <"$WORK/rss"
  gets=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"]["get"])' "$WORK/r.json")
  printf '| %s | %s s | %s s | %d MiB | %d MiB | %d MiB | %s | %s |\n' "$bin" "$wall" "$(echo "$user + $sys" | bc)" \
    $((rss / 1024)) $((anon / 1024)) $((file / 1024)) "$gets" "$(load)" >>"$out"
  rm -rf "$WORK/cache-$bin"
  sync
done
cat "$out"
