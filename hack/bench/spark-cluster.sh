#!/usr/bin/env bash
# spark-cluster.sh: TPC-H on Spark with 1, 2 and 3 executors beside DuckDB and Polars on one node, each
# on the nodes' copies (volume) and on the bucket (s3), in two BenchRuns on the local 3-node cluster.
# The bucket is versitygw behind the shaping proxy (hack/shapeproxy: LATENCY per request, RATE per
# connection), as in the demo; the Dataset keeps a copy on every node (spec.replicas), which Spark's
# executors mount through the CSI driver. Prints each result's geometric mean, start-up, bytes read
# from the bucket, executors' peaks and cost, and saves the BenchRuns to OUT/single-node.yaml and
# OUT/spark.yaml.
#
#   hack/local-cluster up --nodes 3 with PQCACHE_LOCAL_CLUSTER_SPARK=1, then hack/bench/spark-cluster.sh
#
# Environment: SCALE (1), ITERATIONS (2), WARMUPS (1), LATENCY (20ms), RATE (50MiB), OUT (bin/bench-spark).
#   hack/bench/spark-cluster.sh report     # the tables again, from the BenchRuns of the last run
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SCALE=${SCALE:-1}
ITERATIONS=${ITERATIONS:-2}
WARMUPS=${WARMUPS:-1}
LATENCY=${LATENCY:-20ms}
RATE=${RATE:-50MiB}
OUT=${OUT:-$ROOT/bin/bench-spark}
NS=pqcache-spark-bench
export KUBECONFIG=$ROOT/bin/cluster/kubeconfig
KUBECTL=$ROOT/bin/k8s/1.37.2-linux-amd64/kubectl
mkdir -p "$OUT"
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

# report prints each result's figures, then where each Spark Job's start-up went.
report() {
echo "| engine | input | query geomean ms | whole-process geomean ms | start-up ms | bytes from the bucket | driver peak MiB | executor peak max MiB | peaks sum MiB | core-s | GiB-s | cost (micro-USD) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for run in single-node spark; do
	$KUBECTL -n $NS get benchrun $run -o json | python3 -c '
import json, sys
st = json.load(sys.stdin)["status"]
mib = lambda b: "%.0f" % ((b or 0) / 2**20)
for r in st.get("results", []):
    sp = r.get("spark") or {}
    # The traffic of a Spark driver pod is mostly from its executors (task results, the probe), so the
    # bytes from the bucket of a Spark result are the input bytes of its executors (a lower bound on
    # s3: docs/benchmarks.md); for the other engines, the network bytes of their pod.
    s3 = sp.get("s3ReadBytes", 0) if sp else r.get("networkReadBytes", 0)
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r.get("engine"), r.get("input"), r.get("geometricMeanMillis"), r.get("wallGeometricMeanMillis"),
        r.get("startupMillis"), s3, mib(sp.get("driverPeakBytes")), mib(sp.get("executorPeakMaxBytes")),
        mib(sp.get("peakBytesSum")), sp.get("coreSeconds", ""), sp.get("gibSeconds", ""), r.get("costMicros", "")))
'
done

# Where a Spark Job's start-up goes, from the pods' events (one Job at a time, so each driver's
# executors are the executor pods scheduled after it started and before the next driver did): the
# driver's container start to its executors' pods being scheduled (runner, JVM, SparkContext: the
# application's start), to the last executor's container start (executor start), and the rest of the
# result's start-up (executors registering, the tables' footers, a first job).
echo
echo "| Spark Job (driver pod) | application start s | executor pods start s | start-up reported s |"
echo "|---|---|---|---|"
$KUBECTL -n $NS get events -o json | python3 -c '
import json, sys
from datetime import datetime
ev = json.load(sys.stdin)["items"]
t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
def when(e):
    return t(e.get("eventTime") or e.get("lastTimestamp") or e["metadata"]["creationTimestamp"])
drivers, execs = [], []
for e in ev:
    name, reason = e["involvedObject"]["name"], e["reason"]
    if e["involvedObject"]["kind"] != "Pod":
        continue
    if "-exec-" in name and reason in ("Scheduled", "Started"):
        execs.append((when(e), reason, name))
    elif name.startswith("spark-spark-x") and reason == "Started":
        drivers.append((when(e), name))
drivers.sort()
for k, (start, name) in enumerate(drivers):
    end = drivers[k + 1][0] if k + 1 < len(drivers) else float("inf")
    mine = [x for x in execs if start <= x[0] < end]
    sched = [x[0] for x in mine if x[1] == "Scheduled"]
    started = [x[0] for x in mine if x[1] == "Started"]
    if sched and started:
        print("| %s | %.1f | %.1f | |" % (name, min(sched) - start, max(started) - min(sched)))
'
$KUBECTL -n $NS get benchrun spark -o json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["status"].get("results", []):
    print("| %s %s | | | %.1f |" % (r.get("engine"), r.get("input"), (r.get("startupMillis") or 0) / 1000))
'
}

if [ "${1:-}" = report ]; then
	report
	exit 0
fi

# The node agents keep the copies under kubelet's root, which the local cluster keeps per node, with a
# 1Gi reserve: every node is this machine's one disk (test/e2e installs the chart the same way).
step "installing pqcache (one bench Job at a time, so that no two results share the machine)"
make -s helm
bin/helm upgrade --install pqcache charts/pqcache --namespace pqcache-system --create-namespace \
	--values bin/cluster/helm-values.yaml --set worker.maxConcurrentBenchJobs=1 --wait --timeout 3m \
	--set agent.enabled=true --set agent.cacheRoot=/var/lib/kubelet/pqcache-copies --set agent.nodeReserve=1Gi >/dev/null

step "the bucket behind the shaping proxy ($LATENCY a request, $RATE/s a connection)"
$KUBECTL apply -f - <<YAML >/dev/null
apiVersion: v1
kind: Namespace
metadata: {name: $NS, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: Secret
metadata: {name: s3-credentials, namespace: $NS}
stringData: {AWS_ACCESS_KEY_ID: bench, AWS_SECRET_ACCESS_KEY: bench-secret}
---
apiVersion: v1
kind: Pod
metadata: {name: versitygw, namespace: $NS, labels: {app: versitygw}}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: versitygw
      image: pqcache.local/versitygw:v1.8.0
      args: [--port, ":7070", --health, /health, posix, /data]
      env: [{name: ROOT_ACCESS_KEY, value: bench}, {name: ROOT_SECRET_KEY, value: bench-secret}]
      securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
      readinessProbe: {httpGet: {path: /health, port: 7070}, periodSeconds: 1}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: versitygw, namespace: $NS}
spec: {selector: {app: versitygw}, ports: [{port: 7070}]}
---
apiVersion: v1
kind: Pod
metadata: {name: s3-region, namespace: $NS, labels: {app: s3-region}}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: shapeproxy
      image: pqcache.local/shapeproxy:dev
      args: [-listen, ":7071", -upstream, "versitygw.$NS.svc.cluster.local:7070", -latency, "$LATENCY", -rate, "$RATE"]
      securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
      readinessProbe: {tcpSocket: {port: 7071}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: s3-region, namespace: $NS}
spec: {selector: {app: s3-region}, ports: [{port: 7071}]}
YAML
$KUBECTL -n $NS wait --for=condition=Ready pod/versitygw pod/s3-region --timeout=2m >/dev/null
ENDPOINT=http://s3-region.$NS.svc.cluster.local:7071

if [ "$($KUBECTL -n $NS get job load-tpch -o jsonpath='{.status.succeeded}' 2>/dev/null)" != 1 ]; then
	step "generating TPC-H SF $SCALE in the cluster and uploading it"
	$KUBECTL -n $NS delete job load-tpch --ignore-not-found >/dev/null
	$KUBECTL apply -f - <<YAML >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: load-tpch, namespace: $NS}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      securityContext: {runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
      initContainers:
        - name: datagen
          image: pqcache.local/pqcache:dev
          args: [datagen, --scale, "$SCALE", --out, /work/tpch]
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts: [{name: work, mountPath: /work}]
      containers:
        - name: upload
          image: pqcache.local/pqcache:dev
          args: [s3, put, /work/tpch, "s3://bench/tpch/", --endpoint, "http://versitygw.$NS.svc.cluster.local:7070", --path-style]
          envFrom: [{secretRef: {name: s3-credentials}}]
          env: [{name: AWS_REGION, value: us-east-1}]
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts: [{name: work, mountPath: /work}]
      volumes: [{name: work, emptyDir: {}}]
YAML
	$KUBECTL -n $NS wait --for=condition=Complete job/load-tpch --timeout=15m >/dev/null
fi

step "the Dataset, a copy on every node"
$KUBECTL apply -f - <<YAML >/dev/null
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch, namespace: $NS}
spec:
  source:
    s3: {bucket: bench, prefix: tpch/, endpoint: $ENDPOINT, forcePathStyle: true, credentials: {secretRef: {name: s3-credentials}}}
  replicas: {}
YAML
$KUBECTL -n $NS wait --for=condition=Ready dataset/tpch --timeout=15m >/dev/null
$KUBECTL -n $NS get datasetreplicas

step "the BenchRuns: DuckDB and Polars on one node, Spark on 1, 2 and 3 executors; volume and s3"
# A BenchRun has at most 4 engines: one run for the single-node engines, one for Spark. The operator
# runs one bench Job at a time, so the two queue behind each other. Every pod of a Job asks for 1 CPU
# and 2Gi, an executor for 500m to 1 CPU and 2Gi: a driver and three executors fit three 2-CPU nodes.
# DuckDB gets 8 threads, as in the demo (docs/benchmarks.md, "DuckDB over S3: its remote-read knobs").
spark() { printf -- '    - {name: spark, label: spark-x%d, executors: %d, executorResources: {cpuRequest: 500m, cpuLimit: "1", memoryLimit: 2Gi}}\n' "$1" "$1"; }
benchrun() {
	$KUBECTL -n $NS delete benchrun "$1" --ignore-not-found --wait >/dev/null
	$KUBECTL apply -f - <<YAML >/dev/null
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: $1, namespace: $NS}
spec:
  datasetRef: {name: tpch}
  engines:
$2
  inputs: [{type: volume}, {type: s3}]
  configs: [{name: 1cpu-2gi, cpu: "1", memory: 2Gi}]
  iterations: $ITERATIONS
  warmups: $WARMUPS
  timeout: 3h
YAML
}
benchrun single-node "$(printf -- '    - {name: duckdb, settings: [{name: threads, value: "8"}]}\n    - {name: polars}\n')"
benchrun spark "$(spark 1; spark 2; spark 3)"
for run in single-node spark; do
	for _ in $(seq 5400); do
		[ -n "$($KUBECTL -n $NS get benchrun $run -o jsonpath='{.status.completionTime}')" ] && break
		printf '\r  %s: %s   ' "$run" "$($KUBECTL -n $NS get benchrun $run -o jsonpath='{.status.progress}')"
		sleep 2
	done
	echo
	$KUBECTL -n $NS get benchrun $run -o yaml >"$OUT/$run.yaml"
done
report
