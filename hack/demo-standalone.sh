#!/usr/bin/env bash
# demo-standalone.sh: pqcache without Kubernetes, end to end, on this machine.
#  1. builds pqcache and versitygw, starts versitygw on 127.0.0.1;
#  2. generates TPC-H SF 0.1 in the partitioned layout and uploads it;
#  3. syncs it into a local cache directory with `pqcache sync`;
#  4. rewrites one partition in the bucket and syncs again: only that file moves;
#  5. runs the 22 PDS-H queries with `pqcache bench` on the cache and writes report.html.
# Everything runs on 127.0.0.1 and in DEMO_DIR (default bin/demo-standalone); it takes a few minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${DEMO_DIR:-$ROOT/bin/demo-standalone}
PORT=${DEMO_S3_PORT:-7270}
SCALE=${DEMO_SCALE:-0.1}
cd "$ROOT"
step() { printf '\n== %s\n' "$*"; }

step "building pqcache and versitygw"
make -s build versitygw
PQ=$ROOT/bin/pqcache
rm -rf "$DIR" && mkdir -p "$DIR/s3" "$DIR/cache"
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE
ROOT_ACCESS_KEY=demo ROOT_SECRET_KEY=demo-secret bin/versitygw --port "127.0.0.1:$PORT" --health /health posix "$DIR/s3" >"$DIR/versitygw.log" 2>&1 &
S3_PID=$!
trap 'kill $S3_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
EP=http://127.0.0.1:$PORT

step "generating TPC-H SF $SCALE (partitioned) and uploading it to s3://demo/tpch/"
"$PQ" datagen --scale "$SCALE" --out "$DIR/source" --layout partitioned --files-per-table 8
"$PQ" s3 put "$DIR/source" s3://demo/tpch/ --endpoint "$EP" --path-style

step "first sync: everything is copied"
"$PQ" sync s3://demo/tpch/ "$DIR/cache" --endpoint "$EP" --path-style --progress none

step "unchanged re-sync: one listing, no GET"
"$PQ" sync s3://demo/tpch/ "$DIR/cache" --endpoint "$EP" --path-style --progress none

step "replacing one partition (lineitem/batch=3) in the bucket with other data, then syncing: only it moves"
cp "$DIR/source/lineitem/batch=2/part.parquet" "$DIR/part.parquet"
"$PQ" s3 put "$DIR/part.parquet" s3://demo/tpch/lineitem/batch=3/part.parquet --endpoint "$EP" --path-style
"$PQ" sync s3://demo/tpch/ "$DIR/cache" --endpoint "$EP" --path-style --progress none
"$PQ" verify "$DIR/cache"

step "running the 22 PDS-H queries on the cache (fresh process per query)"
"$PQ" bench --data "$DIR/cache" --queries 1-22 --iterations 2 --warmups 1 --label "SF $SCALE / local cache" --json "$DIR/result.json"
"$PQ" report "$DIR/result.json" -o "$DIR/report.html"
step "done: $DIR/report.html"
