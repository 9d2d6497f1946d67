#!/usr/bin/env bash
# table-sync.sh: what a table Dataset copies against a prefix mirror of the same Delta tables. TPC-H
# at SCALE (default 1) written by `pqcache datagen --layout delta` (each table a Delta table with 10
# commits when it has 8 batches: 8 appends, an overwrite, a delete), served by versitygw on
# 127.0.0.1; every table synced twice into fresh directories, once with --table delta (the newest
# version's files) and once as a plain prefix (everything listed), then once more each with nothing
# changed. Prints a markdown table for docs/benchmarks.md.
#
#   hack/bench/table-sync.sh
set -euo pipefail
WORK=${WORK:-$(mktemp -d)}
S3_PORT=${S3_PORT:-7393}
SCALE=${SCALE:-1}
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
PQ=$WORK/pqcache
(cd "$ROOT" && make -s versitygw tpch-extension >&2 && go build -o "$PQ" ./cmd/pqcache)
export PQCACHE_TPCH_EXTENSION=$ROOT/bin/tpch.duckdb_extension

log "TPC-H SF $SCALE as Delta tables"
"$PQ" datagen --scale "$SCALE" --layout delta --files-per-table 8 --out "$WORK/tpch" >&2
start_s3 "$WORK/s3"
s3=(--endpoint "$S3" --path-style)
"$PQ" s3 put "$WORK/tpch" s3://lake/tpch/ "${s3[@]}" >&2

for t in customer lineitem nation orders part partsupp region supplier; do
  for mode in table mirror; do
    args=()
    [ "$mode" = table ] && args=(--table delta)
    for run in first unchanged; do
      "$PQ" sync "s3://lake/tpch/$t/" "$WORK/$mode/$t" "${s3[@]}" "${args[@]}" --progress none --json >"$WORK/$mode-$t-$run.json"
    done
  done
done
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
tables = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]
tot = {}
print("| table | version | table Dataset: files, bytes copied | prefix mirror: files, bytes copied | mirror / table (bytes) | unchanged re-sync, table: LISTs, GETs | mirror: LISTs, GETs |")
print("|---|---|---|---|---|---|---|")
for t in tables:
    r = {(m, run): json.load(open(f"{w}/{m}-{t}-{run}.json")) for m in ("table", "mirror") for run in ("first", "unchanged")}
    tf, mf = r[("table", "first")], r[("mirror", "first")]
    tu, mu = r[("table", "unchanged")], r[("mirror", "unchanged")]
    for k, rep in (("table", tf), ("mirror", mf)):
        tot.setdefault(k, [0, 0])
        tot[k][0] += rep["filesCopied"]; tot[k][1] += rep["bytesCopied"]
    print(f"| {t} | {tf['table']['version']} | {tf['filesCopied']}, {tf['bytesCopied'] / 2**20:.1f} MiB | {mf['filesCopied']}, {mf['bytesCopied'] / 2**20:.1f} MiB "
          f"| {mf['bytesCopied'] / max(tf['bytesCopied'], 1):.2f} | {tu['requests']['list']}, {tu['requests']['get']} | {mu['requests']['list']}, {mu['requests']['get']} |")
print(f"| all | | {tot['table'][0]}, {tot['table'][1] / 2**20:.1f} MiB | {tot['mirror'][0]}, {tot['mirror'][1] / 2**20:.1f} MiB | {tot['mirror'][1] / tot['table'][1]:.2f} | | |")
PY
