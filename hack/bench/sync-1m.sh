#!/usr/bin/env bash
# sync-1m.sh: a million objects end to end on versitygw. The objects (1 KiB each, 1,000 per
# directory) are written straight into versitygw's posix root by hack/bench/s3gen, with the ETag and
# CRC64NVME attributes versitygw would have stored, because uploading them would take far longer than
# the benchmark. Measures, with peak memory split into anonymous and file-backed (hack/bench/rss):
#   1. the full listing alone (hack/bench/floor -list-only: the same client, LIST only);
#   2. the full sync;
#   3. an unchanged re-sync (target: bounded by the listing time, RSS under 128 MiB);
#   4. a re-sync after 1% of the objects were rewritten.
# Prints Markdown. Usage: hack/bench/sync-1m.sh [WORKDIR]  (default /tmp/pqcache-bench-1m; ~9 GB of
# disk and 2.1M inodes)
set -euo pipefail
WORK=${1:-/tmp/pqcache-bench-1m}
N=${N:-1000000}
PARALLEL=${PARALLEL:-8}
S3_PORT=${S3_PORT:-7172}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
build_tools
rm -rf "$WORK"
mkdir -p "$WORK"
start_s3 "$WORK/s3"
"$AWS" --endpoint-url "$S3" s3 mb s3://million >/dev/null
log "writing $N objects into the posix root"
bin/s3gen -root "$WORK/s3" -bucket million -n "$N" -size 1024 2>&1 | tail -1 >&2
settle

sync_cmd=(bin/pqcache sync s3://million/ "$WORK/cache" --endpoint "$S3" --path-style --parallel "$PARALLEL" --progress none)
row() { # what rss-line report-json
  read -r wall user sys rss anon file <<<"$2"
  local req; req=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); q=r["requests"]; print("%d LIST, %d GET, %d copied" % (q["list"], q["get"], r["filesCopied"]))' "$3")
  printf '| %s | %s s | %s s | %d MiB | %d MiB | %d MiB | %s | %s |\n' "$1" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024)) $((anon / 1024)) $((file / 1024)) "$req" "$(load)"
}
out=$WORK/table.md
{
  echo "$N objects of 1 KiB, versitygw v1.8.0 on 127.0.0.1, parallelism $PARALLEL, $(date -u +%F)."
  echo
  echo "| step | wall | CPU (user+sys) | peak RSS | anonymous | file-backed | requests | load |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$out"
log "listing"
bin/rss -o "$WORK/rss" -- bin/floor -list-only -endpoint "$S3" s3://million/ /dev/null >/dev/null
read -r wall user sys rss anon file <"$WORK/rss"
printf '| the listing alone (floor -list-only: %d LIST) | %s s | %s s | %d MiB | %d MiB | %d MiB | | %s |\n' $((N / 1000)) "$wall" "$(echo "$user + $sys" | bc)" \
  $((rss / 1024)) $((anon / 1024)) $((file / 1024)) "$(load)" >>"$out"
log "full sync"
bin/rss -o "$WORK/rss" -- "${sync_cmd[@]}" --json >"$WORK/r.json" 2>"$WORK/sync.log"
row "full sync" "$(cat "$WORK/rss")" "$WORK/r.json" >>"$out"
for i in 1 2; do
  log "unchanged re-sync $i"
  bin/rss -o "$WORK/rss" -- "${sync_cmd[@]}" --json >"$WORK/r.json" 2>>"$WORK/sync.log"
  row "unchanged re-sync ($i)" "$(cat "$WORK/rss")" "$WORK/r.json" >>"$out"
done
log "rewriting 1% of the objects"
bin/s3gen -root "$WORK/s3" -bucket million -n "$N" -size 1024 -change 100 2>&1 | tail -1 >&2
bin/rss -o "$WORK/rss" -- "${sync_cmd[@]}" --json >"$WORK/r.json" 2>>"$WORK/sync.log"
row "re-sync, 1% changed" "$(cat "$WORK/rss")" "$WORK/r.json" >>"$out"
cat "$out"
