#!/usr/bin/env bash
# peers.sh: filling N copies of a data set (N = 1, 2, 3 nodes) two ways, side by side in one run, with
# the bytes the bucket sent counted at the bucket's side:
#   bucket  every copy syncs from the bucket (what a Job per node, or a cache per node, does);
#   peers   one copy (the seed) syncs from the bucket, the others copy the seed's generation from its
#           `pqcache peer serve`, falling back to the bucket (what the node agents do).
# The bucket is a versitygw on 127.0.0.1 behind hack/bench/countproxy (which counts what the store
# sends) and hack/shapeproxy with the demo's shape (LATENCY per request, RATE per connection), like a
# bucket in a region. The peer is not shaped: nodes of one cluster share a LAN. Copies that the
# scenario runs at once run at once here too (the followers of the seed, or every bucket sync), on this
# machine's 2 cores and one disk, so the times are a floor on contention, not on a cluster of N
# machines. Same binary, data, parallelism (PARALLEL) and guarantees (durable, verified, generations)
# for every row. The data set is TPC-H at SCALE (0.1 is the demo's), partitioned like the demo's.
#
#   hack/bench/peers.sh        # WORK=/tmp/pqcache-peers SCALE=0.1 PARALLEL=8 LATENCY=20ms RATE=50MiB
set -euo pipefail
WORK=${WORK:-/tmp/pqcache-peers}
S3_PORT=${S3_PORT:-7093} COUNT_PORT=${COUNT_PORT:-7094} PROXY_PORT=${PROXY_PORT:-7095} PEER_PORT=${PEER_PORT:-7096}
SCALE=${SCALE:-0.1} PARALLEL=${PARALLEL:-8}
LATENCY=${LATENCY:-20ms} RATE=${RATE:-50MiB}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rm -rf "$WORK" && mkdir -p "$WORK"
(cd "$ROOT" && make -s versitygw >&2 && go build -o bin/pqcache ./cmd/pqcache && go build -o bin/shapeproxy ./hack/shapeproxy &&
  go build -o bin/countproxy ./hack/bench/countproxy)
log "generating TPC-H SF $SCALE"
"$ROOT/bin/pqcache" datagen --scale "$SCALE" --layout partitioned --files-per-table 8 --out "$WORK/data" >&2
start_s3 "$WORK/s3"
"$ROOT/bin/pqcache" s3 put "$WORK/data" s3://bench/tpch/ --endpoint "$S3" --path-style >&2
"$ROOT/bin/countproxy" -listen "127.0.0.1:$COUNT_PORT" -target "$S3" >"$WORK/count.log" 2>&1 &
bench_pids+=($!)
"$ROOT/bin/shapeproxy" -listen "127.0.0.1:$PROXY_PORT" -upstream "127.0.0.1:$COUNT_PORT" -latency "$LATENCY" -rate "$RATE" >"$WORK/proxy.log" 2>&1 &
bench_pids+=($!)
export PQCACHE_PEER_KEY_ID=bench-peer PQCACHE_PEER_SECRET=bench-peer-secret
COUNTS=http://127.0.0.1:$COUNT_PORT/__counts
for _ in $(seq 50); do curl -sf "$COUNTS" >/dev/null && break; sleep 0.1; done
DATA_BYTES=$(find "$WORK/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

sync_args=(--endpoint "http://127.0.0.1:$PROXY_PORT" --path-style --parallel "$PARALLEL" --progress none --generations 2)
run=0
# fill MODE N: fills N fresh directories; prints one Markdown row.
fill() {
  local mode=$1 n=$2 i t0 t1 pids=()
  run=$((run + 1))
  local base=$WORK/run$run
  mkdir -p "$base"
  curl -sf -X DELETE "$COUNTS" >/dev/null
  t0=$(date +%s.%N)
  if [ "$mode" = bucket ]; then
    for i in $(seq 1 "$n"); do
      "$ROOT/bin/pqcache" sync s3://bench/tpch/ "$base/node$i" "${sync_args[@]}" --json >"$base/node$i.json" 2>"$base/node$i.log" &
      pids+=($!)
    done
  else
    "$ROOT/bin/pqcache" sync s3://bench/tpch/ "$base/node1" "${sync_args[@]}" --serve-peers --json >"$base/node1.json" 2>"$base/node1.log"
    if [ "$n" -gt 1 ]; then
      local g
      g=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest"]["generation"])' "$base/node1.json")
      "$ROOT/bin/pqcache" peer serve --listen "127.0.0.1:$PEER_PORT" "tpch=$base/node1" 2>"$base/peer.log" &
      local server=$!
      for _ in $(seq 50); do curl -s "http://127.0.0.1:$PEER_PORT/" >/dev/null && break; sleep 0.1; done
      for i in $(seq 2 "$n"); do
        "$ROOT/bin/pqcache" sync s3://bench/tpch/ "$base/node$i" "${sync_args[@]}" --peer "http://127.0.0.1:$PEER_PORT/tpch" \
          --peer-generation "$g" --json >"$base/node$i.json" 2>"$base/node$i.log" &
        pids+=($!)
      done
    fi
  fi
  for p in "${pids[@]}"; do wait "$p" || { echo "a sync failed; see $base" >&2; return 1; }; done
  t1=$(date +%s.%N)
  [ -z "${server:-}" ] || { kill "$server"; wait "$server" 2>/dev/null || true; unset server; }
  curl -sf "$COUNTS" | python3 -c '
import json, sys
c = json.load(sys.stdin)
mode, n, secs, data = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
b, gets, lists = c.get("BYTES", 0), c.get("GET", 0), c.get("LIST", 0)
print(f"| {mode} | {n} | {secs:.1f} s | {b / 2**20:.1f} MiB | {b / data:.2f}x | {gets} | {lists} |")
' "$mode" "$n" "$(echo "$t1 - $t0" | bc -l)" "$DATA_BYTES"
  for i in $(seq 1 "$n"); do
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["result"]=="Succeeded", r; print(r["manifest"]["digest"])' "$base/node$i.json"
  done | sort -u | awk 'END { if (NR != 1) { print "copies differ" > "/dev/stderr"; exit 1 } }'
}

log "data set: $(numfmt --to=iec "$DATA_BYTES") in $(find "$WORK/data" -type f | wc -l) files"
echo "| copies from | nodes | time to fill | bytes the bucket sent | of the data set | bucket GETs | bucket LISTs |"
echo "|---|---|---|---|---|---|---|"
for n in 1 2 3; do
  fill bucket "$n"
  fill peers "$n"
done
log "load: $(load); results in $WORK"
