#!/usr/bin/env bash
# duckdb-remote.sh: DuckDB's input paths and its remote-read knobs, side by side in one run. TPC-H at
# SCALE (default 0.1, the demo's; partitioned like the demo's) is read by the 22 PDS-H queries from the
# volume (a local directory), from s3:// and mixed-direct (lineitem's newest partition from the bucket,
# the rest from the volume), the bucket being a versitygw on 127.0.0.1 behind hack/shapeproxy with the
# demo's shape (LATENCY per request, RATE per connection). Each s3 input runs once per knob variant
# (VARIANTS): DuckDB's defaults, prefetch_all_parquet_files, disable_parquet_prefetching, and threads=8
# (DuckDB's httpfs reads with blocking requests, one per thread: more threads than cores overlap more
# round trips). The same binary, data and iterations for every row, and THREADS threads but where the
# variant sets threads itself. Prints one Markdown row per input × variant: geometric mean and total of
# the query medians, and the bytes read from the bucket (half of what loopback counts: the proxy's
# upstream read and the client's read of the same bytes both cross lo).
#
#   hack/bench/duckdb-remote.sh            # WORK=/tmp/pqcache-duckdb-remote SCALE=0.1 THREADS=2 ITER=3
set -euo pipefail
WORK=${WORK:-/tmp/pqcache-duckdb-remote}
S3_PORT=${S3_PORT:-7083}
PROXY_PORT=${PROXY_PORT:-7084}
SCALE=${SCALE:-0.1} THREADS=${THREADS:-2} ITER=${ITER:-3}
LATENCY=${LATENCY:-20ms} RATE=${RATE:-50MiB}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rm -rf "$WORK" && mkdir -p "$WORK"
(cd "$ROOT" && make -s versitygw httpfs-extension tpch-extension >&2 && go build -o bin/pqcache ./cmd/pqcache && go build -o bin/shapeproxy ./hack/shapeproxy)
export PQCACHE_HTTPFS_EXTENSION=$ROOT/bin/httpfs.duckdb_extension
log "generating TPC-H SF $SCALE"
"$ROOT/bin/pqcache" datagen --scale "$SCALE" --layout partitioned --files-per-table 8 --out "$WORK/data" >&2
start_s3 "$WORK/s3"
"$ROOT/bin/pqcache" s3 put "$WORK/data" s3://bench/tpch/ --endpoint "$S3" --path-style >&2
"$ROOT/bin/shapeproxy" -listen "127.0.0.1:$PROXY_PORT" -upstream "127.0.0.1:$S3_PORT" -latency "$LATENCY" -rate "$RATE" >"$WORK/proxy.log" 2>&1 &
bench_pids+=($!)
SHAPED=http://127.0.0.1:$PROXY_PORT
sleep 0.5

# run NAME ARGS...: one bench run; prints its Markdown row.
run() {
  local name=$1; shift
  "$ROOT/bin/pqcache" bench --engine duckdb --threads "$THREADS" --iterations "$ITER" --warmups 1 --net-interfaces lo \
    --json "$WORK/$name.json" "$@" >/dev/null 2>"$WORK/$name.log"
  python3 - "$WORK/$name.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = [q for q in r["queries"] if q["status"] == "Succeeded"]
total = sum(q["medianMillis"] for q in ok)
print(f"| {sys.argv[2]} | {len(ok)}/{len(r['queries'])} | {r.get('geometricMeanMillis', 0)} ms | {total} ms | {r.get('networkReadBytes', 0) / 2 / 2**20:.1f} MiB |")
PY
}

echo "| input / variant | queries | geometric mean | sum of medians | read from the bucket |"
echo "|---|---|---|---|---|"
run volume --data "$WORK/data"
s3=(--endpoint "$SHAPED" --path-style)
for variant in ${VARIANTS:-default prefetch_all_parquet_files=true disable_parquet_prefetching=true threads=8}; do
  knob=()
  [ "$variant" = default ] || knob=(--duckdb-setting "$variant")
  run "s3 $variant" --data s3://bench/tpch "${s3[@]}" "${knob[@]}"
  run "mixed-direct $variant" --data "$WORK/data" --fresh-data s3://bench/tpch/ --fresh-prefix lineitem/batch=7/ "${s3[@]}" "${knob[@]}"
done
log "load: $(load); results in $WORK"
