#!/usr/bin/env bash
# during-refresh.sh: the same queries idle, then while the data refreshes, then idle again, over a
# volume's current generation (pqcache bench --during-refresh): a sync loop publishes new generations
# from the bucket while the run rewrites a share of the files it reads there. Prints each run's
# geometric mean and the per-query ratio of the refresh run's medians to the idle runs' mean, and checks
# that every digest is the idle run's.
#
#   hack/bench/during-refresh.sh DATA_DIR      # e.g. the output of pqcache datagen --scale 0.1
#
# Environment: ITERATIONS (3), WARMUPS (1), THREADS (2), PERCENT (25), EVERY (5s), SYNC_EVERY (2),
# S3_PORT (7392), WORK (a temporary directory).
set -euo pipefail
DATA=${1:?usage: hack/bench/during-refresh.sh DATA_DIR}
DATA=$(cd "$DATA" && pwd)
WORK=${WORK:-$(mktemp -d)}
S3_PORT=${S3_PORT:-7392}
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
PQ=$ROOT/bin/pqcache

start_s3 "$WORK/s3"
s3=(--endpoint "$S3" --path-style)
"$PQ" s3 put "$DATA" s3://lake/tpch/ "${s3[@]}" >&2
"$PQ" sync s3://lake/tpch/ "$WORK/cache" "${s3[@]}" --progress none >/dev/null
bench=("$PQ" bench --engine duckdb --threads "${THREADS:-2}" --iterations "${ITERATIONS:-3}" --warmups "${WARMUPS:-1}"
	--net-interfaces none --data "$WORK/cache/.pqcache/generations/current")

"${bench[@]}" --json "$WORK/idle1.json" >/dev/null 2>&1
(while [ ! -f "$WORK/stop" ]; do "$PQ" sync s3://lake/tpch/ "$WORK/cache" "${s3[@]}" --progress none >/dev/null; sleep "${SYNC_EVERY:-2}"; done) &
loop=$!
"${bench[@]}" --during-refresh --refresh-source s3://lake/tpch/ --refresh-percent "${PERCENT:-25}" --refresh-every "${EVERY:-5s}" \
	"${s3[@]}" --json "$WORK/refresh.json" >/dev/null 2>"$WORK/refresh.err"
touch "$WORK/stop"
wait "$loop"
"${bench[@]}" --json "$WORK/idle2.json" >/dev/null 2>&1
grep 'during refresh' "$WORK/refresh.err"
python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
rs = {n: json.load(open(f"{w}/{n}.json")) for n in ("idle1", "refresh", "idle2")}
for n, r in rs.items():
    print(f"{n}: geometric mean {r['geometricMeanMillis']} ms, wall {r['wallMillis']} ms")
idle = {q["name"]: q["digest"] for q in rs["idle1"]["queries"]}
same = all(q["digest"] == idle[q["name"]] for r in rs.values() for q in r["queries"])
print("digests equal to idle:", same)
ratios = sorted(b["medianMillis"] / ((a["medianMillis"] + c["medianMillis"]) / 2)
                for a, b, c in zip(*(r["queries"] for r in rs.values())))
print(f"refresh / idle per query: min {ratios[0]:.2f}, median {ratios[len(ratios) // 2]:.2f}, max {ratios[-1]:.2f}")
PY
