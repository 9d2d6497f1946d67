#!/usr/bin/env bash
# agent-fill.sh: the node agents on the local cluster (hack/local-cluster up --nodes 3), filling a
# Dataset with a copy on every node: how long until every copy holds the data, which copies came from
# the bucket and which from a peer, and each agent's memory and CPU, idle and while filling, read from
# /proc on this machine (the agents are processes of it). TPC-H at SCALE (default 1) is generated and
# uploaded by a Job to an in-cluster versitygw; the chart is installed (or upgraded) with the agent on.
#
#   hack/local-cluster up --nodes 3 && hack/bench/agent-fill.sh      # SCALE=1
set -euo pipefail
# shellcheck source=hack/bench/cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh"
SCALE=${SCALE:-1}
NS=pqcache-bench-agent

install_agents /var/lib/kubelet/pqcache-bench
s3_with_tpch "$NS" "$SCALE"

before=$(agents)
sleep 30
idle=$(agents)
log "filling a Dataset with a copy on every node"
start=$(date +%s.%N)
copies_everywhere "$NS"
end=$(date +%s.%N)
busy=$(agents)
python3 - "$before" "$idle" "$busy" "$start" "$end" "$SCALE" <<'PY'
import sys
def parse(s):  # agents' lines: NODE PID RSS HWM TICKS
    return {l.split()[1]: [int(x) for x in l.split()[2:]] for l in s.splitlines() if l.strip()}
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
