# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""Time polars-benchmark's Polars form of each query against pqcache's (bench/queries/polars), in one
process, alternately, on the same LazyFrame scans: what the forms cost apart from either runner.

    cd WORK/pb && PYTHONPATH=. POLARS_MAX_THREADS=2 PB_VENV/bin/python \
        ROOT/hack/bench/polars-benchmark-forms.py DATA [QUERY...]

WORK/pb is the patched copy hack/bench/polars-benchmark.sh makes (its queries are imported, and their
run_query is replaced by one that keeps the LazyFrame), DATA the flat TPC-H directory. Every collect()
runs warm (the files in the page cache, the engine loaded), ITERATIONS (7) times per form, the order
alternating. Prints per query the median of each form and their ratio, then the geometric mean of
the ratios.
"""

import importlib
import math
import os
import statistics
import sys
import time
from datetime import date, datetime, timedelta

import polars as pl

from queries.polars import utils

ITERATIONS = int(os.environ.get("ITERATIONS", "7"))
TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def upstream_form(number):
    """Upstream's LazyFrame for query number, built by its own module."""
    kept = {}
    utils.run_query = lambda _, lf: kept.setdefault("lf", lf)
    importlib.import_module(f"queries.polars.q{number}").q()
    return kept["lf"]


def pqcache_form(number, tables):
    """pqcache's LazyFrame for query number, as bench/polars/run.py builds it."""
    namespace = {"pl": pl, "date": date, "datetime": datetime, "timedelta": timedelta}
    with open(os.path.join(ROOT, "bench", "queries", "polars", f"q{number}.py"), encoding="utf-8") as f:
        exec(compile(f.read(), f"q{number}", "exec"), namespace)  # noqa: S102 - the repository's own query
    return namespace["query"](tables)


def main(argv):
    """Print the table of medians and the geometric mean of their ratios."""
    data, numbers = argv[0], [int(n) for n in argv[1:]] or list(range(1, 23))
    tables = {n: pl.scan_parquet(os.path.join(data, f"{n}.parquet")) for n in TABLES}
    pl.LazyFrame({"a": [1]}).collect()
    ratios = []
    print("| query | upstream form | pqcache form | ratio |")
    print("|---|---|---|---|")
    for n in numbers:
        forms = {"upstream": upstream_form(n), "pqcache": pqcache_form(n, tables)}
        times = {k: [] for k in forms}
        for i in range(ITERATIONS):
            for k in sorted(forms, reverse=bool(i % 2)):
                start = time.perf_counter()
                forms[k].collect(engine="in-memory")
                times[k].append((time.perf_counter() - start) * 1000)
        a, b = statistics.median(times["upstream"]), statistics.median(times["pqcache"])
        ratios.append(b / a)
        print(f"| {n} | {a:.0f} ms | {b:.0f} ms | {b / a:.2f} |")
    print(f"\ngeometric mean of the ratios: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
