#!/usr/bin/env bash
# Query time as the engines time it (issue 37) against the whole-process time pqcache reported before,
# per engine and input path, interleaved query by query (compare.sh) on one machine:
#
#   PQCACHE_OLD=/tmp/pqcache-old hack/bench/query-time.sh /tmp/sf1
#
# DATA is a flat TPC-H directory (`pqcache datagen --scale 1 --out DATA`). It is served by a versitygw
# on 127.0.0.1 for the s3 input (bucket "bench", prefix "tpch/"). PQCACHE_OLD is a pqcache built
# before in-engine timing (e.g. `git worktree add /tmp/old ea60c2a && go build -o /tmp/pqcache-old
# ./cmd/pqcache` there): its figures are whole processes. Without it only the new runs are made.
# Environment as compare.sh (ITERATIONS, WARMUPS, THREADS, QUERIES), plus S3_PORT (7391), WORK and
# OLD_COMMIT (ea60c2a: the old binary's Polars engine is taken from it).
# Prints compare.sh's per-query table, then per run the geometric means of the query time, start-up
# and whole-process wall time, and per engine the s3/volume ratio.
set -euo pipefail
DATA=${1:?usage: query-time.sh DATA_DIR}
WORK=${WORK:-$(mktemp -d)}
S3_PORT=${S3_PORT:-7391}
# shellcheck source=hack/bench/lib.sh
source "$(dirname "$0")/lib.sh"
PQ=${PQCACHE:-$ROOT/bin/pqcache}
export PQCACHE_HTTPFS_EXTENSION=${PQCACHE_HTTPFS_EXTENSION:-$ROOT/bin/httpfs.duckdb_extension}
export PQCACHE_POLARS_PYTHON=${PQCACHE_POLARS_PYTHON:-$ROOT/bin/polars-venv/bin/python}
export PQCACHE_POLARS_DIR=${PQCACHE_POLARS_DIR:-$ROOT/bench/polars}
# The old binary runs the Polars engine of its own commit (OLD_COMMIT), as it shipped.
old_polars=()
if [ -n "${PQCACHE_OLD:-}" ]; then
  mkdir -p "$WORK/old"
  git -C "$ROOT" archive "${OLD_COMMIT:-ea60c2a}" bench/polars | tar -x -C "$WORK/old"
  old_polars=(--polars-dir "$WORK/old/bench/polars")
fi

start_s3 "$WORK/s3"
"$PQ" s3 put "$DATA" s3://bench/tpch/ --endpoint "$S3" --path-style >/dev/null
s3args="--data s3://bench/tpch/ --endpoint $S3 --path-style --net-interfaces lo"

runs=()
for eng in duckdb polars; do
  [ -n "${PQCACHE_OLD:-}" ] && runs+=("$eng-volume-old@$PQCACHE_OLD=--engine $eng --data $DATA ${old_polars[*]}" "$eng-s3-old@$PQCACHE_OLD=--engine $eng $s3args ${old_polars[*]}")
  runs+=("$eng-volume=--engine $eng --data $DATA" "$eng-s3=--engine $eng $s3args")
done
mkdir -p "$WORK/out"
OUT=$WORK/out PQCACHE=$PQ "$(dirname "$0")/compare.sh" "${runs[@]}"

echo
echo "| run | query time (geometric mean) | start-up | whole process |"
echo "|---|---|---|---|"
for run in "${runs[@]}"; do
  label=${run%%=*}; label=${label%%@*}
  cat "$WORK/out/$label"-[0-9]*.json | jq -s -r --arg l "$label" '
    def gm(f): [.[].queries[0] | select(.status == "Succeeded") | f // 0 | if . < 1 then 1 else . end | log] | (add / length) | exp | round;
    "| \($l) | \(gm(.medianMillis)) ms | \(if $l | endswith("-old") then "–" else "\(gm(.medianStartupMillis)) ms" end) | \(if $l | endswith("-old") then "\(gm(.medianMillis)) ms" else "\(gm(.medianWallMillis)) ms" end) |"'
done
