#!/usr/bin/env bash
# scan.sh: the built-in scan workload (projection, selective filters and counts over lineitem) on one
# big file against many small ones, for DuckDB and Python Polars side by side in one run: the same
# data, threads (THREADS) and iterations. Prints one Markdown row per engine × query: median, peak
# memory above the process's baseline, and its anonymous and file-backed parts.
#
#   hack/bench/scan.sh            # WORK=/tmp/pqcache-scan SCALE=1 FILE_SIZE=1Mi THREADS=2 ITER=3
set -euo pipefail
WORK=${WORK:-/tmp/pqcache-scan}
SCALE=${SCALE:-1} FILE_SIZE=${FILE_SIZE:-1Mi} THREADS=${THREADS:-2} ITER=${ITER:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

rm -rf "$WORK" && mkdir -p "$WORK"
(cd "$ROOT" && make -s tpch-extension polars-env >&2 && go build -o bin/pqcache ./cmd/pqcache)
export PQCACHE_POLARS_PYTHON=${PQCACHE_POLARS_PYTHON:-$ROOT/bin/polars-venv/bin/python}
log "generating TPC-H SF $SCALE with the scan layouts (one file; files of $FILE_SIZE)"
"$ROOT/bin/pqcache" datagen --scale "$SCALE" --scan "$FILE_SIZE" --out "$WORK/data" >&2
log "many: $(find "$WORK/data/scan/many" -name '*.parquet' | wc -l) files"

for engine in duckdb polars; do
  "$ROOT/bin/pqcache" bench --workload scan --engine "$engine" --threads "$THREADS" --iterations "$ITER" --warmups 1 \
    --data "$WORK/data" --json "$WORK/$engine.json" >/dev/null 2>"$WORK/$engine.log"
done
echo "| query | engine | median | peak | anon | file | digest |"
echo "|---|---|---|---|---|---|---|"
python3 - "$WORK/duckdb.json" "$WORK/polars.json" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
mib = lambda b: f"{(b or 0) / 2**20:.0f} MiB"
for i, q in enumerate(runs[0]["queries"]):
    for r in runs:
        x = r["queries"][i]
        # A process that ends before the sampler reads /proc has a peak (from its rusage) but no split.
        split = x.get("peakAnonBytes") or x.get("peakFileBytes")
        anon, file = (mib(x.get("peakAnonBytes")), mib(x.get("peakFileBytes"))) if split else ("–", "–")
        print(f"| {x['name']} | {r['engine']} | {x.get('medianMillis', '–')} ms | {mib(x.get('peakMemoryBytes'))} | "
              f"{anon} | {file} | {x.get('digest', '')[:8]} |")
PY
log "load: $(cut -d' ' -f1-3 /proc/loadavg); results in $WORK"
