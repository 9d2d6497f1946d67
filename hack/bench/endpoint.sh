#!/usr/bin/env bash
# endpoint.sh: reading a Dataset's copies through the node's S3 endpoint for readers against reading
# them as a directory (the CSI volume) and from the bucket, on the local cluster
# (hack/local-cluster up --nodes 3). TPC-H at SCALE (default 1) in an in-cluster versitygw, a copy on
# every node; then
#   1. a BenchRun: DuckDB and Polars x volume, endpoint and s3, ITERATIONS (3) after a warm-up, one
#      configuration of 1 CPU and 2 GiB, one Job at a time; each Job's 8-stream probe after its queries;
#   2. the probe alone, PROBES (5) times per input interleaved, on one node: `pqcache bench probe`
#      with 8 streams (8 parallel readers) over the volume and through the endpoint, and that node's
#      agent's CPU time and peak memory (VmHWM) while the endpoint probes ran.
# SHAPE=LATENCY/RATE (e.g. 20ms/50MiB) puts hack/shapeproxy in front of the bucket, so that the s3
# input (and the syncs) read it as a bucket in a region; PROBES=0 skips part 2. Prints markdown
# tables for docs/benchmarks.md.
#
#   hack/local-cluster up --nodes 3 && hack/bench/endpoint.sh
set -euo pipefail
# shellcheck source=hack/bench/cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh"
SCALE=${SCALE:-1}
ITERATIONS=${ITERATIONS:-3}
PROBES=${PROBES:-5}
NS=pqcache-bench-endpoint

# One bench Job at a time: the nodes share this machine's 2 cores, and Jobs side by side would
# measure each other.
install_agents /var/lib/kubelet/pqcache-bench --set worker.maxConcurrentBenchJobs=1
s3_with_tpch "$NS" "$SCALE"
if [ -n "${SHAPE:-}" ]; then # e.g. SHAPE=20ms/50MiB: the bucket as a region's, for the s3 input
  shape_s3 "$NS" "${SHAPE%/*}" "${SHAPE#*/}"
  log "the bucket behind hack/shapeproxy: ${SHAPE%/*} a request, ${SHAPE#*/}/s a connection"
fi
log "a copy on every node"
copies_everywhere "$NS"
"$K" -n "$NS" wait configmap/pqcache-s3 --for=create --timeout 2m >/dev/null

log "BenchRun: DuckDB and Polars x volume, endpoint, s3 ($ITERATIONS iterations)"
"$K" -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: endpoint}
spec:
  datasetRef: {name: tpch}
  engines: [{name: duckdb}, {name: polars}]
  inputs: [{type: volume}, {type: endpoint}, {type: s3}]
  configs: [{name: 1cpu-2gi, cpu: "1", memory: 2Gi}]
  iterations: $ITERATIONS
  warmups: 1
YAML
for _ in $(seq 2700); do # 90 minutes
  [ -n "$("$K" -n "$NS" get benchrun endpoint -o jsonpath='{.status.completionTime}')" ] && break
  sleep 2
done
"$K" -n "$NS" get benchrun endpoint -o json >"${OUT:=$(mktemp -d)}/benchrun.json"

node=$("$K" get nodes -o jsonpath='{.items[0].metadata.labels.kubernetes\.io/hostname}')
# probe NAME INPUT: one Job on $node reading the copy with 8 streams; prints its JSON result.
probe() {
  local name=$1 input=$2 data volume env
  if [ "$input" = volume ]; then
    data=/data
    volume="{name: data, csi: {driver: data.pqcache.dev, readOnly: true, volumeAttributes: {dataset: tpch}}}"
    env="[]"
  else
    data=s3://lake/tpch/
    volume="{name: data, configMap: {name: pqcache-s3}}"
    env="[{name: AWS_CA_BUNDLE, value: /data/ca.crt}, {name: AWS_EC2_METADATA_DISABLED, value: 'true'}]"
  fi
  "$K" -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $name}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {kubernetes.io/hostname: $node}
      containers:
        - name: probe
          image: pqcache.local/pqcache:dev
          args: [bench, probe, --data, $data, --streams, "8", --path-style, --json]
          env: $env
          envFrom: [{secretRef: {name: pqcache-s3-credentials}}, {configMapRef: {name: pqcache-s3}}]
          resources: {requests: {cpu: "1", memory: 512Mi}, limits: {cpu: "1", memory: 512Mi}}
          volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
      volumes: [$volume]
YAML
  "$K" -n "$NS" wait "job/$name" --for=condition=Complete --timeout 5m >/dev/null
  "$K" -n "$NS" logs "job/$name" | tail -1
}
agent_on_node() { agents | awk -v n="$node" '$1 == n'; }
: >"$OUT/probes.txt"
for i in $(seq "$PROBES"); do
  echo "volume $(probe "volume-$i" volume)" >>"$OUT/probes.txt"
  before=$(agent_on_node)
  result=$(probe "endpoint-$i" endpoint)
  echo "endpoint $result $before $(agent_on_node)" >>"$OUT/probes.txt"
done

python3 - "$OUT" "$node" <<'PY'
import json, math, statistics, sys
out, node = sys.argv[1], sys.argv[2]
run = json.load(open(f"{out}/benchrun.json"))
print("| engine | input | node | query geometric mean | probe, 8 streams |")
print("|---|---|---|---|---|")
by = {}
for r in sorted(run["status"].get("results", []), key=lambda r: (r["engine"], r["input"])):
    by[(r["engine"], r["input"])] = r
    print(f"| {r['engine']} | {r['input']} | {r.get('node', '')} | {r.get('geometricMeanMillis')} ms | {r.get('readBytesPerSecond', 0) / 1e6:.0f} MB/s |")
for e in sorted({e for e, _ in by}):
    v, p = by.get((e, "volume")), by.get((e, "endpoint"))
    if v and p:
        print(f"{e}: endpoint / volume = {p['geometricMeanMillis'] / v['geometricMeanMillis']:.2f}x")
    digests = {i: {q["name"]: q.get("digest") for q in r.get("queries", [])} for (en, i), r in by.items() if en == e}
    print(f"{e}: every input's digests equal: {len({json.dumps(d, sort_keys=True) for d in digests.values()}) == 1}")
vol, end, cpu, hwm = [], [], 0, 0
moved = 0
for line in open(f"{out}/probes.txt"):
    f = line.split()
    r = json.loads(f[1])
    (vol if f[0] == "volume" else end).append(r["bytesPerSecond"])
    if f[0] == "endpoint":
        b, a = f[2:7], f[7:12]  # NODE PID RSS HWM TICKS, before and after
        if b[1] == a[1]:
            cpu += int(a[4]) - int(b[4]); moved += r["bytes"]
        hwm = max(hwm, int(a[3]))
if not vol:
    sys.exit(0)
print()
print(f"probe on {node}, {len(vol)} runs each, 8 streams: volume median {statistics.median(vol) / 1e6:.0f} MB/s "
      f"(min {min(vol) / 1e6:.0f}, max {max(vol) / 1e6:.0f}); endpoint median {statistics.median(end) / 1e6:.0f} MB/s "
      f"(min {min(end) / 1e6:.0f}, max {max(end) / 1e6:.0f}); endpoint / volume {statistics.median(end) / statistics.median(vol):.2f}")
if moved:
    print(f"agent on {node} while the endpoint probes ran: {cpu / 100:.2f} s of CPU for {moved / 2**30:.2f} GiB served "
          f"({cpu / 100 / (moved / 2**30):.2f} CPU-s per GiB), peak RSS (VmHWM since restart) {hwm / 1024:.0f} MiB")
PY
echo "raw results in $OUT" >&2
