#!/usr/bin/env bash
# scan-chart.sh renders the chart with every part that makes a pod or a grant switched on, scans the
# manifests with checkov (a scanner of Kubernetes manifests, pinned with hashes in
# hack/checkov-requirements.txt, installed into bin/checkov-venv), writes every finding to
# bin/checkov-findings.txt, and fails on any finding that hack/checkov-accepted.txt does not list with
# its reason. So a new finding fails `make verify` until it is fixed or accepted, with a reason, in
# review; an accepted finding that no longer shows is reported too (the list must not go stale).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCALBIN=${LOCALBIN:-$ROOT/bin}
HELM=${HELM:-$LOCALBIN/helm}
VENV=$LOCALBIN/checkov-venv
LOCK=$ROOT/hack/checkov-requirements.txt
ACCEPTED=$ROOT/hack/checkov-accepted.txt
PYTHON=${PYTHON:-python3}

# The venv, exactly as the lock pins it (hack/locked-venv.sh: nothing to do when it is).
PYTHON=$PYTHON "$ROOT/hack/locked-venv.sh" "$VENV" 'import checkov' "$LOCK"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every optional part that creates a pod, a grant or a webhook, as a cluster-wide install has them.
"$HELM" template pqcache "$ROOT/charts/pqcache" --namespace pqcache-system \
  --set agent.enabled=true --set worker.progress.enabled=true \
  --set metrics.serviceMonitor.enabled=true --set monitoring.prometheusRule.enabled=true \
  --set monitoring.dashboard.enabled=true >"$work/chart.yaml"
# checkov exits 1 when it finds anything: the comparison below decides.
"$VENV/bin/checkov" -f "$work/chart.yaml" --framework kubernetes --quiet --compact -o json \
  >"$work/report.json" 2>"$work/stderr" || true
"$VENV/bin/python" - "$work/report.json" "$ACCEPTED" "$LOCALBIN/checkov-findings.txt" <<'PY'
import json, sys
report, accepted_path, out = sys.argv[1:4]
data = json.load(open(report))
if isinstance(data, list):
    data = next(d for d in data if d.get("check_type") == "kubernetes")
if data.get("summary", {}).get("parsing_errors"):
    sys.exit("scan-chart: checkov could not parse the rendered chart")
found = sorted({f"{c['check_id']} {c['resource']}" for c in data["results"]["failed_checks"]})
accepted = {}
for line in open(accepted_path):
    line = line.strip()
    if line and not line.startswith("#"):
        check, resource, reason = line.split(None, 2)
        accepted[f"{check} {resource}"] = reason
with open(out, "w") as f:
    f.write("\n".join(found) + "\n")
s = data["summary"]
print(f"scan-chart: checkov {s['checkov_version']}: {s['resource_count']} resources, {s['passed']} checks passed, "
      f"{s['failed']} failed ({len(found)} distinct), {len(accepted)} accepted with a reason")
new = [f for f in found if f not in accepted]
gone = [a for a in accepted if a not in found]
for f in new:
    print(f"scan-chart: NEW finding, fix it or accept it with a reason in hack/checkov-accepted.txt: {f}")
for a in gone:
    print(f"scan-chart: accepted finding no longer found, remove it from hack/checkov-accepted.txt: {a}")
sys.exit(1 if new or gone else 0)
PY
