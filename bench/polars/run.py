# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""pqcache's Polars engine: run queries of a resolved workload in turn and print their rows.

    python run.py --workload FILE --queries NAME[,NAME...] [--engine in-memory|streaming|auto]

`pqcache bench` starts this once per query per iteration (process isolation), so that each run's
memory is its own, or once per iteration for every query (session isolation), and digests the rows
it prints on stdout, one per line in the canonical row format (canon.py), exactly as it does
DuckDB's; each query's rows are followed by a delimiter line (QUERY_DELIMITER). It reports its
timings to the file $PQCACHE_TIMING_FILE names (docs/bench.md, "Timing protocol"): when Polars is
imported, the tables are mapped and the engine has run once on a one-row frame (its one-time
initialisation), "ready_unix_ns=N rss_bytes=N"; after each query, "query=NAME
query_ms=F", the time of its collect() (Parquet and S3 reads included; printing the rows is not).
--query NAME is --queries with one query. FILE is the resolved workload `pqcache bench` writes (Go:
bench/workload.Resolved):

    {"workload": NAME,
     "tables": {NAME: {"files": [absolute paths or s3:// URLs], "hive": bool, "fileRowNumber": bool}},
     "queries": [{"name": ..., "sql": ..., "polars": ...}],
     "s3": {"Endpoint": ..., "Region": ..., "PathStyle": bool}}

Each table is a LazyFrame over exactly its files (t[name]). A query's Polars form, when it has one, is
Python defining query(t) that returns a LazyFrame, run with pl, date, datetime and timedelta imported;
otherwise its SQL runs through Polars' SQL interface over the same tables.

Environment:
    PQCACHE_POLARS_ENGINE   the engine when --engine is not given (default in-memory)
    PQCACHE_TIMING_FILE     where to report timings (none: not reported)
    POLARS_MAX_THREADS      threads of Polars' pool (read by Polars; bench sets it from --threads)
    POLARS_FORCE_ASYNC      1: the async (object store) reader for local files too (read by Polars)
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL
                            S3 credentials, and the region and endpoint when the workload has none
    AWS_CA_BUNDLE           a CA bundle for the S3 endpoint (a private CA); Polars' HTTP client reads
                            SSL_CERT_FILE, so it is passed on as that
    TMPDIR                  where the streaming engine spills (a directory of this process's own,
                            removed at the end), unless POLARS_OOC_SPILL_DIR names one

Exit status: 0 with the rows on stdout, 2 for a usage error (arguments, the workload file, an unknown
query), 1 when the query fails (the reason on stderr).
"""

import argparse
import io
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import date, datetime, timedelta

ENGINES = ("in-memory", "streaming", "auto")
ROW_NUMBER = "file_row_number"
# Lines written to stdout at a time: few system calls, little memory beyond the result's own.
CHUNK_ROWS = 8192
# Written after each query's rows: not a canonical row (it starts with the record separator). Go:
# wire.QueryDelimiter.
QUERY_DELIMITER = "\x1epqcache:end-of-query"


class UsageError(Exception):
    """A problem with how the engine was called: exit status 2."""


def parse_args(argv, env):
    """Read the command line; the engine defaults to $PQCACHE_POLARS_ENGINE, else in-memory."""
    p = argparse.ArgumentParser(prog="run.py", description="Run queries of a resolved workload on Polars.")
    p.add_argument("--workload", required=True, help="the resolved workload (JSON) pqcache bench writes")
    names = p.add_mutually_exclusive_group(required=True)
    names.add_argument("--queries", help="the queries to run in turn, by name, comma-separated")
    names.add_argument("--query", help="one query's name (--queries with one)")
    p.add_argument("--engine", default=env.get("PQCACHE_POLARS_ENGINE") or "in-memory",
                   help="Polars' engine: " + ", ".join(ENGINES))
    args = p.parse_args(argv)  # exits with status 2 on a bad command line
    if args.engine not in ENGINES:
        p.error(f"--engine {args.engine}: want one of {', '.join(ENGINES)}")
    args.names = [n for n in (args.queries or args.query).split(",") if n]
    if not args.names:
        p.error("no query named")
    return args


def load_workload(path, names):
    """Read the resolved workload and return it with the queries named names, in that order."""
    try:
        with open(path, encoding="utf-8") as f:
            workload = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"reading the workload {path}: {e}") from e
    by_name = {q.get("name"): q for q in workload.get("queries") or []}
    for name in names:
        if name not in by_name:
            have = ", ".join(q.get("name", "?") for q in workload.get("queries") or [])
            raise UsageError(f"the workload {workload.get('workload', path)} has no query {name!r} (it has {have})")
    return workload, [by_name[n] for n in names]


def storage_options(s3, env):
    """Polars' object-store options for s3:// files: the workload's endpoint, region and addressing,
    the standard AWS environment for credentials (and for endpoint and region when the workload has
    none). Only what is set is passed, so Polars' own defaults and credential chain (a web identity
    token, say) still apply to the rest."""
    s3 = s3 or {}
    opts = {}

    def put(key, value):
        if value:
            opts[key] = value

    endpoint = s3.get("Endpoint") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    put("aws_endpoint_url", endpoint)
    put("aws_region", s3.get("Region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"))
    put("aws_access_key_id", env.get("AWS_ACCESS_KEY_ID"))
    put("aws_secret_access_key", env.get("AWS_SECRET_ACCESS_KEY"))
    put("aws_session_token", env.get("AWS_SESSION_TOKEN"))
    if endpoint and endpoint.startswith("http://"):
        opts["aws_allow_http"] = "true"
    if "PathStyle" in s3:
        # PathStyle: endpoint/bucket/key (most S3-compatible stores); else bucket.endpoint/key, AWS's form.
        opts["aws_virtual_hosted_style_request"] = "false" if s3["PathStyle"] else "true"
    return opts


def private_spill_dir(env):
    """Give the streaming engine a spill directory of this process's own under $TMPDIR, unless
    POLARS_OOC_SPILL_DIR names one. Polars' default, /var/tmp/polars-USER, is missing (and cannot be
    made) on an image's read-only root file system, and its spill tasks panic there; a private
    directory is also removed when the query ends, so spilled files never outlive it. Returns the
    directory to remove, or None."""
    if env.get("POLARS_OOC_SPILL_DIR"):
        return None
    path = tempfile.mkdtemp(prefix="pqcache-polars-spill-")
    os.environ["POLARS_OOC_SPILL_DIR"] = path
    return path


def trust_ca_bundle(env):
    """Let Polars' HTTP client trust $AWS_CA_BUNDLE (a private CA), which it reads as SSL_CERT_FILE.
    It must happen before the first s3:// read starts the client."""
    if env.get("AWS_CA_BUNDLE"):
        os.environ["SSL_CERT_FILE"] = env["AWS_CA_BUNDLE"]


def scan_table(pl, table, options):
    """A table as one LazyFrame over exactly its files (no globbing: the runner listed them).

    One scan reads files of one kind only, local or s3:// (Polars takes the first file's), so a
    mixed-direct table, local files with its fresh partitions in the bucket, is a concatenation of one
    scan per run of either kind. file_row_number is each row's position in its own file, as DuckDB
    numbers it; Polars' row index numbers a scan's rows, so then each file is a scan of its own."""
    files = table.get("files") or []
    if not files:
        raise ValueError("a table without files")
    hive, numbered = bool(table.get("hive")), bool(table.get("fileRowNumber"))

    def scan(paths):
        kwargs = {"hive_partitioning": hive, "glob": False}
        if paths[0].startswith("s3://"):
            kwargs["storage_options"] = options
        if numbered:
            kwargs["row_index_name"] = ROW_NUMBER
        return pl.scan_parquet(paths, **kwargs)

    if numbered:
        groups = [[f] for f in files]
    else:
        groups = [list(g) for _, g in itertools.groupby(files, key=lambda f: f.startswith("s3://"))]
    scans = [scan(g) for g in groups]
    lf = scans[0] if len(scans) == 1 else pl.concat(scans, how="vertical")
    if not numbered:
        return lf
    # DuckDB's order, for SELECT *: the file's columns, file_row_number, then the Hive columns.
    after = hive_keys(files[0]) if hive else []
    return lf.select(pl.exclude(ROW_NUMBER, *after), pl.col(ROW_NUMBER), *after)


def hive_keys(path):
    """The Hive partition columns a file's path names: the keys of its key=value directories."""
    return [part.split("=", 1)[0] for part in path.split("/")[:-1] if "=" in part]


def tables(pl, workload, env):
    """Every table of the workload as a LazyFrame, by name (scans are lazy: nothing is read yet)."""
    options = storage_options(workload.get("s3"), env)
    out = {}
    for name, table in sorted((workload.get("tables") or {}).items()):
        try:
            out[name] = scan_table(pl, table, options)
        except Exception as e:
            raise RuntimeError(f"table {name}: {e}") from e
    return out


def build_query(pl, query, t):
    """The query's LazyFrame: query(t) from its Polars form, else its SQL over the tables."""
    source = query.get("polars") or ""
    if source.strip():
        namespace = {"pl": pl, "date": date, "datetime": datetime, "timedelta": timedelta, "__name__": "pqcache_query"}
        exec(compile(source, f"<query {query['name']}>", "exec"), namespace)
        fn = namespace.get("query")
        if not callable(fn):
            raise ValueError("its polars form defines no function query(t)")
        lf = fn(t)
        if not isinstance(lf, pl.LazyFrame):
            raise TypeError(f"query(t) returned a {type(lf).__name__}, want a polars.LazyFrame")
        return lf
    sql = query.get("sql") or ""
    if not sql.strip():
        raise ValueError("it has neither sql nor a polars form")
    return pl.SQLContext(frames=t).execute(sql, eager=False)


def write_rows(canon, df, out):
    """Print the result in the canonical row format, one line per row: each column's kind from its
    Polars type (canon.column_kind raises for a type with no canonical form, a Datetime), its values as
    Polars hands them to Python (a Float32 widened to a float, a Decimal as a decimal.Decimal)."""
    kinds = [canon.column_kind(s.name, str(s.dtype)) for s in df.get_columns()]
    lines = []
    for line in canon.format_rows(df.iter_rows(), kinds):
        lines.append(line)
        if len(lines) == CHUNK_ROWS:
            out.write("\n".join(lines) + "\n")
            lines.clear()
    if lines:
        out.write("\n".join(lines) + "\n")


def import_canon():
    """The canonical row format (canon.py), shared with the Spark engine: beside this program in an
    engine image, in bench/canon in a checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, "canon.py")):
        sys.path.insert(1, os.path.join(os.path.dirname(here), "canon"))
    import canon

    return canon


def resident_bytes():
    """This process's resident memory (VmRSS), as the runner's sampler counts it; 0 if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def report(env, line):
    """Append one line to the timing file, if the runner named one."""
    path = env.get("PQCACHE_TIMING_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def warm_up(pl, engine):
    """Run the engine once on a one-row Parquet file in memory, before the ready signal. Polars
    initialises its thread pool and its Parquet reader on the first collect(), 5-20 ms here
    (docs/benchmarks.md, "Polars beside polars-benchmark's own runner"): engine load, which belongs
    to start-up, not to the first query's time. polars-benchmark's runner does the same outside its
    timer (with a file in a temporary directory; in memory, nothing is written to a read-only root)."""
    buf = io.BytesIO()
    pl.DataFrame({"a": [1]}).write_parquet(buf)
    buf.seek(0)
    pl.scan_parquet(buf).collect(engine=engine)


def run(args, env):
    """Load the workload, run the queries in turn on the chosen engine and print their rows."""
    workload, queries = load_workload(args.workload, args.names)
    trust_ca_bundle(env)
    spill = private_spill_dir(env)
    try:
        # Imported here, after the environment is final: Polars reads its settings when it loads.
        import polars as pl

        canon = import_canon()
        t = tables(pl, workload, env)
        warm_up(pl, args.engine)
        report(env, f"ready_unix_ns={time.time_ns()} rss_bytes={resident_bytes()}")
        for query in queries:
            args.current = query["name"]
            lf = build_query(pl, query, t)
            start = time.perf_counter_ns()
            df = lf.collect(engine=args.engine)
            elapsed = time.perf_counter_ns() - start
            report(env, f"query={query['name']} query_ms={elapsed / 1e6:.3f}")
            write_rows(canon, df, sys.stdout)
            sys.stdout.write(QUERY_DELIMITER + "\n")
            sys.stdout.flush()
    finally:
        if spill:
            shutil.rmtree(spill, ignore_errors=True)


def main(argv=None):
    """Run, mapping failures to the exit status pqcache bench records."""
    args = parse_args(sys.argv[1:] if argv is None else argv, os.environ)
    try:
        run(args, os.environ)
    except UsageError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - any failure of the query is the query's result
        print(f"query {getattr(args, 'current', ','.join(args.names))} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
