# cluster-lib.sh: what the benchmarks on the local cluster (hack/local-cluster up --nodes 3) share
# (sourced, not run): kubectl and Helm, the chart installed with the node agents, an in-cluster
# versitygw loaded with TPC-H, and each node agent's memory and CPU read from /proc on this machine
# (the agents are processes of it).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBECONFIG=${KUBECONFIG:-$ROOT/bin/cluster/kubeconfig}
K="$ROOT/bin/k8s/1.37.2-linux-amd64/kubectl"
HELM=$(ls "$ROOT"/bin/helm-v* | head -1)
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# install_agents CACHE_ROOT [helm args...]: installs or upgrades the chart with the agents on, their
# cache under CACHE_ROOT on each node, and restarts them so that VmHWM counts this run only.
install_agents() {
  local cache=$1; shift
  log "installing the chart with the agents"
  "$HELM" upgrade --install pqcache "$ROOT/charts/pqcache" -n pqcache-system --create-namespace --wait --timeout 3m \
    --values "$ROOT/bin/cluster/helm-values.yaml" --set agent.enabled=true --set agent.cacheRoot="$cache" "$@" >/dev/null
  "$K" -n pqcache-system rollout restart ds/pqcache-agent >/dev/null
  "$K" -n pqcache-system rollout status ds/pqcache-agent --timeout 2m >/dev/null
}

# s3_with_tpch NS SCALE: a fresh namespace NS with a versitygw Pod and Service (Secret s3 holds its
# keys) and TPC-H at SCALE under s3://lake/tpch/, 8 files per table; sets ENDPOINT.
s3_with_tpch() {
  local ns=$1 scale=$2
  "$K" delete ns "$ns" --ignore-not-found --wait >/dev/null
  "$K" create ns "$ns" >/dev/null
  "$K" -n "$ns" create secret generic s3 --from-literal=AWS_ACCESS_KEY_ID=bench --from-literal=AWS_SECRET_ACCESS_KEY=bench-secret >/dev/null
  "$K" -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: s3, labels: {app: s3}}
spec:
  containers:
    - name: versitygw
      image: pqcache.local/versitygw:v1.8.0
      args: [--port, ":7070", --health, /health, --keep-alive, --quiet, posix, /data]
      env: [{name: ROOT_ACCESS_KEY, value: bench}, {name: ROOT_SECRET_KEY, value: bench-secret}]
      readinessProbe: {httpGet: {path: /health, port: 7070}, periodSeconds: 1}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: s3}
spec: {selector: {app: s3}, ports: [{port: 7070}]}
YAML
  "$K" -n "$ns" wait pod/s3 --for=condition=Ready --timeout 2m >/dev/null
  ENDPOINT=http://s3.$ns.svc.cluster.local:7070
  log "generating TPC-H SF $scale and uploading it to $ENDPOINT"
  "$K" -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: load}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      initContainers:
        - {name: datagen, image: pqcache.local/pqcache:dev, args: [datagen, --scale, "$scale", --layout, partitioned, --files-per-table, "8", --out, /work/tpch], volumeMounts: [{name: work, mountPath: /work}]}
      containers:
        - name: put
          image: pqcache.local/pqcache:dev
          args: [s3, put, /work/tpch, "s3://lake/tpch/", --endpoint, "$ENDPOINT", --path-style]
          envFrom: [{secretRef: {name: s3}}]
          env: [{name: AWS_REGION, value: us-east-1}]
          volumeMounts: [{name: work, mountPath: /work}]
      volumes: [{name: work, emptyDir: {}}]
YAML
  "$K" -n "$ns" wait job/load --for=condition=Complete --timeout 15m >/dev/null
}

# agents prints "NODE PID VmRSS_kB VmHWM_kB cpu_ticks" per node agent process, its node read from
# the NODE_NAME in its environment.
agents() {
  local p node
  for p in $(pgrep -f "pqcache agent --cache-root"); do
    node=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^NODE_NAME=//p')
    echo "${node:-?} $p $(awk '/VmRSS/ {print $2}' "/proc/$p/status") $(awk '/VmHWM/ {print $2}' "/proc/$p/status") $(awk '{print $14 + $15}' "/proc/$p/stat")"
  done | sort
}

# copies_everywhere NS: a Dataset tpch of s3://lake/tpch/ (s3_with_tpch's) with a copy on every one of
# the 3 nodes; returns once every copy is ready.
copies_everywhere() {
  local ns=$1
  "$K" -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch}
spec:
  source: {s3: {bucket: lake, prefix: tpch/, endpoint: "$ENDPOINT", forcePathStyle: true, credentials: {secretRef: {name: s3}}}}
  replicas: {minReady: 3}
YAML
  "$K" -n "$ns" wait dataset/tpch --for=jsonpath='{.status.replicas.readyOfDesired}'=3/3 --timeout 15m >/dev/null
}

# shape_s3 NS LATENCY RATE: puts hack/shapeproxy (LATENCY per request, RATE per connection) in front
# of s3_with_tpch's server, so that it behaves like a bucket in a region, and points ENDPOINT at it.
shape_s3() {
  local ns=$1 latency=$2 rate=$3
  "$K" -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: s3-region, labels: {app: s3-region}}
spec:
  containers:
    - name: shapeproxy
      image: pqcache.local/shapeproxy:dev
      args: [-listen, ":7071", -upstream, "s3.$ns.svc.cluster.local:7070", -latency, "$latency", -rate, "$rate"]
      readinessProbe: {tcpSocket: {port: 7071}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: s3-region}
spec: {selector: {app: s3-region}, ports: [{port: 7071}]}
YAML
  "$K" -n "$ns" wait pod/s3-region --for=condition=Ready --timeout 2m >/dev/null
  ENDPOINT=http://s3-region.$ns.svc.cluster.local:7071
}
