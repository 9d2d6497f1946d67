#!/usr/bin/env bash
# agent-fill.sh: the node agents on the local cluster (hack/local-cluster up --nodes 3), filling a
# Dataset with a copy on every node: how long until every copy holds the data, which copies came from
# the bucket and which from a peer, and each agent's memory and CPU, idle and while filling, read from
# /proc on this machine (the agents are processes of it). TPC-H at SCALE (default 1) is generated and
# uploaded by a Job to an in-cluster versitygw; the chart is installed (or upgraded) with the agent on.
#
#   hack/local-cluster up --nodes 3 && hack/bench/agent-fill.sh      # SCALE=1
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCALE=${SCALE:-1}
NS=pqcache-bench-agent
export KUBECONFIG=${KUBECONFIG:-$ROOT/bin/cluster/kubeconfig}
K="$ROOT/bin/k8s/1.37.2-linux-amd64/kubectl"
HELM=$(ls "$ROOT"/bin/helm-v* | head -1)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

log "installing the chart with the agent"
"$HELM" upgrade --install pqcache "$ROOT/charts/pqcache" -n pqcache-system --create-namespace --wait --timeout 3m \
  --values "$ROOT/bin/cluster/helm-values.yaml" --set agent.enabled=true --set agent.cacheRoot=/var/lib/kubelet/pqcache-bench >/dev/null
"$K" -n pqcache-system rollout restart ds/pqcache-agent >/dev/null # fresh processes: VmHWM counts this run only
"$K" -n pqcache-system rollout status ds/pqcache-agent --timeout 2m >/dev/null
"$K" delete ns "$NS" --ignore-not-found --wait >/dev/null
"$K" create ns "$NS" >/dev/null
"$K" -n "$NS" create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID=bench --from-literal=AWS_SECRET_ACCESS_KEY=bench-secret >/dev/null
"$K" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: s3, labels: {app: s3}}
spec:
  containers:
    - name: versitygw
      image: pqcache.local/versitygw:v1.8.0
      args: [--port, ":7070", --health, /health, posix, /data]
      env: [{name: ROOT_ACCESS_KEY, value: bench}, {name: ROOT_SECRET_KEY, value: bench-secret}]
      readinessProbe: {httpGet: {path: /health, port: 7070}, periodSeconds: 1}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: s3}
spec: {selector: {app: s3}, ports: [{port: 7070}]}
EOF
"$K" -n "$NS" wait pod/s3 --for=condition=Ready --timeout 2m >/dev/null
ENDPOINT=http://s3.$NS.svc.cluster.local:7070
log "generating TPC-H SF $SCALE and uploading it to $ENDPOINT"
"$K" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: load}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      initContainers:
        - {name: datagen, image: pqcache.local/pqcache:dev, args: [datagen, --scale, "$SCALE", --layout, partitioned, --files-per-table, "8", --out, /work/tpch], volumeMounts: [{name: work, mountPath: /work}]}
      containers:
        - name: put
          image: pqcache.local/pqcache:dev
          args: [s3, put, /work/tpch, "s3://lake/tpch/", --endpoint, "$ENDPOINT", --path-style]
          envFrom: [{secretRef: {name: s3}}]
          env: [{name: AWS_REGION, value: us-east-1}]
          volumeMounts: [{name: work, mountPath: /work}]
      volumes: [{name: work, emptyDir: {}}]
EOF
"$K" -n "$NS" wait job/load --for=condition=Complete --timeout 10m >/dev/null

# agents: "PID VmRSS_kB VmHWM_kB cpu_ticks" per agent process.
agents() {
  for p in $(pgrep -f "pqcache agent"); do
    echo "$p $(awk '/VmRSS/ {print $2}' /proc/$p/status) $(awk '/VmHWM/ {print $2}' /proc/$p/status) $(awk '{print $14 + $15}' /proc/$p/stat)"
  done | sort
}
before=$(agents)
sleep 30
idle=$(agents)
log "filling a Dataset with a copy on every node"
start=$(date +%s.%N)
"$K" -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch}
spec:
  source: {s3: {bucket: lake, prefix: tpch/, endpoint: "$ENDPOINT", forcePathStyle: true, credentials: {secretRef: {name: s3}}}}
  replicas: {minReady: 3}
EOF
"$K" -n "$NS" wait dataset/tpch --for=jsonpath='{.status.replicas.readyOfDesired}'=3/3 --timeout 10m >/dev/null
end=$(date +%s.%N)
busy=$(agents)
python3 - "$before" "$idle" "$busy" "$start" "$end" "$SCALE" <<'PY'
import sys
def parse(s):
    return {l.split()[0]: [int(x) for x in l.split()[1:]] for l in s.splitlines() if l.strip()}
before, idle, busy = parse(sys.argv[1]), parse(sys.argv[2]), parse(sys.argv[3])
start, end, scale = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
print(f"SF {scale}: every copy ready {end - start:.1f} s after the Dataset was applied")
print("| agent | idle RSS | idle CPU (30 s) | peak RSS while filling | CPU while filling |")
print("|---|---|---|---|---|")
for pid in sorted(busy):
    b, i, u = before.get(pid), idle.get(pid), busy[pid]
    if not b or not i:
        continue
    print(f"| {pid} | {i[0] / 1024:.0f} MiB | {(i[2] - b[2]) / 100 / 30 * 1000:.1f} ms/s | {u[1] / 1024:.0f} MiB | {(u[2] - i[2]) / 100:.2f} s |")
PY
"$K" -n "$NS" get pqdr -o custom-columns=NODE:.spec.nodeName,ROLE:.spec.role,GENERATION:.status.generation,COPIED:.status.lastSync.filesCopied,FROM_BUCKET_FALLBACK:.status.lastSync.filesFromFallback,GETS:.status.lastSync.getRequests,MILLIS:.status.lastSync.durationMillis
"$K" delete ns "$NS" --wait=false >/dev/null
