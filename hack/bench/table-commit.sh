#!/usr/bin/env bash
# table-commit.sh: how long a commit to a Delta table takes to be served by every node, on the local
# cluster (hack/local-cluster up --nodes 3). lineitem at SCALE (default 1) written by `pqcache datagen
# --layout delta` (10 commits) into an in-cluster versitygw; a table Dataset with a copy on every node;
# then COMMITS (3) times: a new data file and the commit that adds it are PUT from this machine through a
# port-forward, the Dataset's refresh.manual token is set (what an S3 event notification does, minus the
# queue), and the time is taken until the seed's copy, then every copy, serves the new version.
#
#   hack/local-cluster up --nodes 3 && hack/bench/table-commit.sh
set -euo pipefail
# shellcheck source=hack/bench/cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh"
SCALE=${SCALE:-1}
COMMITS=${COMMITS:-3}
NS=pqcache-bench-table
WORK=$(mktemp -d)
PQ=$WORK/pqcache
(cd "$ROOT" && make -s tpch-extension >&2 && go build -o "$PQ" ./cmd/pqcache)

install_agents /var/lib/kubelet/pqcache-bench
s3_with_tpch "$NS" 0.01 # the namespace, the server and its Secret; the table is loaded below
log "writing lineitem at SF $SCALE as a Delta table and uploading it"
PQCACHE_TPCH_EXTENSION=$ROOT/bin/tpch.duckdb_extension "$PQ" datagen --scale "$SCALE" --layout delta --files-per-table 8 --out "$WORK/tpch" >&2
"$K" -n "$NS" port-forward svc/s3 17070:7070 >/dev/null 2>&1 &
forward=$!
trap 'kill $forward 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:17070/health >/dev/null && break; sleep 0.2; done
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1
s3=(--endpoint http://127.0.0.1:17070 --path-style)
"$PQ" s3 put "$WORK/tpch/lineitem" s3://lake/tables/lineitem/ "${s3[@]}" >&2

"$K" -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: lineitem}
spec:
  source:
    s3: {bucket: lake, prefix: tables/lineitem/, endpoint: "$ENDPOINT", forcePathStyle: true, credentials: {secretRef: {name: s3}}}
    table: {format: Delta}
  replicas: {minReady: 3}
YAML
"$K" -n "$NS" wait dataset/lineitem --for=jsonpath='{.status.replicas.readyOfDesired}'=3/3 --timeout 15m >/dev/null

# versions prints "ROLE [TABLE_VERSION] GENERATION" per copy (a follower reports no table version).
versions() {
  "$K" -n "$NS" get pqdr -o jsonpath='{range .items[*]}{.spec.role} {.status.lastSync.tableVersion} {.status.generation}{"\n"}{end}'
}
now() { date +%s.%N; }
echo "| commit | seed serves it | every node serves it |"
echo "|---|---|---|"
for i in $(seq "$COMMITS"); do
  v=$((9 + i))
  new="$WORK/commit-$v"
  mkdir -p "$new/_delta_log"
  cp "$WORK/tpch/lineitem/part-00001.parquet" "$new/part-$v-append.parquet"
  size=$(stat -c %s "$new/part-$v-append.parquet")
  printf '{"commitInfo":{"timestamp":%s,"operation":"WRITE"}}\n{"add":{"path":"part-%s-append.parquet","partitionValues":{},"size":%s,"modificationTime":%s,"dataChange":true}}\n' \
    "$(date +%s000)" "$v" "$size" "$(date +%s000)" >"$new/_delta_log/$(printf '%020d' "$v").json"
  "$PQ" s3 put "$new/part-$v-append.parquet" "s3://lake/tables/lineitem/part-$v-append.parquet" "${s3[@]}" >/dev/null
  "$PQ" s3 put "$new/_delta_log/$(printf '%020d' "$v").json" "s3://lake/tables/lineitem/_delta_log/$(printf '%020d' "$v").json" "${s3[@]}" >/dev/null
  start=$(now)
  "$K" -n "$NS" patch dataset lineitem --type merge -p "{\"spec\":{\"refresh\":{\"manual\":\"commit-$v\"}}}" >/dev/null
  # The seed reports the table version it copied; followers copy the seed's generation of it.
  seed="" gen=""
  for _ in $(seq 600); do
    vs=$(versions)
    if [ -z "$seed" ] && echo "$vs" | grep -q "^Seed $v "; then
      seed=$(now) gen=$(echo "$vs" | awk -v v="$v" '$1 == "Seed" && $2 == v {print $3}')
    fi
    [ -n "$gen" ] && [ "$(echo "$vs" | awk -v g="$gen" '$NF == g' | wc -l)" = 3 ] && break
    sleep 0.2
  done
  all=$(now)
  printf '| version %s | %.1f s | %.1f s |\n' "$v" "$(echo "$seed - $start" | bc)" "$(echo "$all - $start" | bc)"
done
"$K" delete ns "$NS" --wait=false >/dev/null
