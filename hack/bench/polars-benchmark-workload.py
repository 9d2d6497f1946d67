# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""Write a pqcache workload (JSON) whose Polars forms are polars-benchmark's own queries, so that
`pqcache bench --workload FILE` runs exactly upstream's LazyFrames under pqcache's timer: what is left
between the two runners is then the runners, not the forms (hack/bench/polars-benchmark.sh FORMS=upstream).

    python polars-benchmark-workload.py PB_DIR OUT.json

PB_DIR is a polars-benchmark checkout (6e3fefc). Each queries/polars/qN.py defines q(), which reads
tables with utils.get_<table>_ds() and ends with utils.run_query(Q_NUM, <frame>); the form written is
that body as query(t), the tables from t and the frame returned. The tables are pqcache datagen's flat
files (<table>.parquet under --data); each query's SQL is pqcache's own (bench/queries/qNN.sql).
"""

import ast
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GETTERS = {
    "get_line_item_ds": "lineitem", "get_orders_ds": "orders", "get_customer_ds": "customer",
    "get_region_ds": "region", "get_nation_ds": "nation", "get_supplier_ds": "supplier",
    "get_part_ds": "part", "get_part_supp_ds": "partsupp",
}


def form(path):
    """Upstream's q() as pqcache's query(t): its body, tables from t, the frame returned."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "q")
    lines = source.splitlines()[fn.body[0].lineno - 1:fn.end_lineno]
    body = "\n".join(lines)
    for getter, table in GETTERS.items():
        body = body.replace(f"utils.{getter}()", f't["{table}"]')
    body, n = re.subn(r"utils\.run_query\(Q_NUM, (\w+)\)", r"return \1", body)
    if n != 1 or "utils." in body:
        raise SystemExit(f"{path}: not the shape 6e3fefc has (get_*_ds() ... run_query(Q_NUM, frame))")
    # Module-level imports and constants the body may use (date, Q_NUM); pl is given by run.py.
    head = [ast.get_source_segment(source, n) for n in ast.parse(source).body
            if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign)) and "queries" not in ast.get_source_segment(source, n)]
    return "\n".join(head) + "\n\ndef query(t):\n" + body + "\n"


def main(argv):
    """Write the workload."""
    pb_dir, out = argv
    data_tables = sorted(set(GETTERS.values()))
    queries = []
    for n in range(1, 23):
        with open(os.path.join(ROOT, "bench", "queries", f"q{n:02d}.sql"), encoding="utf-8") as f:
            sql = f.read()
        queries.append({"name": f"q{n}", "sql": sql, "polars": form(os.path.join(pb_dir, "queries", "polars", f"q{n}.py"))})
    workload = {"name": "polars-benchmark-forms", "tables": {t: {"path": f"{t}.parquet"} for t in data_tables}, "queries": queries}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(workload, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
