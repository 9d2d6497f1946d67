# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""Set polars-benchmark's timings.csv beside pqcache bench's JSON (hack/bench/polars-benchmark.sh).

    python polars-benchmark-compare.py TIMINGS_CSV PQ_DIR

TIMINGS_CSV is upstream's (solution, version, query_number, duration[s], ...: one row per query run);
PQ_DIR holds pqcache's rROUND-qN.json, one query and one iteration each. Prints a Markdown table: per
query the best (minimum) time on each side, their ratio, and pqcache's start-up and wall time (median
over rounds) for scale; then the geometric means of the best times, their ratio and whether they are
within 10% of each other (issue 37). Standard library only: it runs in upstream's venv.
"""

import csv
import glob
import json
import math
import os
import re
import statistics
import sys

TOLERANCE = 0.10


def upstream(path):
    """Upstream's times in ms by query number, every run; and the Polars version it logged."""
    times, versions = {}, set()
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["solution"] != "polars":
                continue
            times.setdefault(int(row["query_number"]), []).append(float(row["duration[s]"]) * 1000)
            versions.add(row["version"])
    return times, versions


def pqcache(directory):
    """pqcache's runs by query number: (query ms, start-up ms, wall ms) of each succeeded one."""
    runs = {}
    for path in glob.glob(os.path.join(directory, "r*-q*.json")):
        number = int(re.search(r"-q(\d+)\.json$", path).group(1))
        with open(path, encoding="utf-8") as f:
            q = json.load(f)["queries"][0]
        if q["status"] != "Succeeded" or q.get("timing") != "engine":
            raise SystemExit(f"{path}: q{number} is {q['status']}, timing {q.get('timing')}: not comparable")
        runs.setdefault(number, []).append((q["millis"][0], q["startupMillis"][0], q["wallMillis"][0]))
    return runs


def geomean(values):
    """The geometric mean, with values under 1 ms counted as 1 ms (pqcache reports whole ms)."""
    return math.exp(sum(math.log(max(v, 1.0)) for v in values) / len(values))


def main(argv):
    """Print the table; exit 1 when the geometric means are more than 10% apart."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    pb, versions = upstream(argv[0])
    pq = pqcache(argv[1])
    if sorted(pb) != sorted(pq):
        raise SystemExit(f"different queries: upstream {sorted(pb)}, pqcache {sorted(pq)}")
    print(f"polars-benchmark's Polars: {', '.join(sorted(versions))}; rounds: {len(next(iter(pq.values())))}")
    print()
    print("| query | polars-benchmark best | pqcache best | pqcache / upstream | pqcache start-up | pqcache wall |")
    print("|---|---|---|---|---|---|")
    best_pb, best_pq = [], []
    for n in sorted(pb):
        b, p = min(pb[n]), min(r[0] for r in pq[n])
        best_pb.append(b)
        best_pq.append(p)
        startup = statistics.median(r[1] for r in pq[n])
        wall = statistics.median(r[2] for r in pq[n])
        print(f"| {n} | {b:.0f} ms | {p:.0f} ms | {p / max(b, 1.0):.2f} | {startup:.0f} ms | {wall:.0f} ms |")
    g_pb, g_pq = geomean(best_pb), geomean(best_pq)
    ratio = g_pq / g_pb
    print(f"| geometric mean | {g_pb:.0f} ms | {g_pq:.0f} ms | {ratio:.2f} | | |")
    print()
    within = abs(ratio - 1) <= TOLERANCE
    print(f"pqcache / polars-benchmark geometric mean: {ratio:.3f} ({'within' if within else 'NOT within'} 10%)")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
