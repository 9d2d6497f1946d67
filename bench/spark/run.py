# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""pqcache's Spark engine: run queries of a resolved workload in one Spark application, print their rows.

    python run.py --workload FILE --queries NAME[,NAME...]

`pqcache bench` starts this once per iteration for every query of it (session isolation only: a JVM
and a Spark application per query would time their start, not the query). It starts one SparkSession
(its JVM, and in Kubernetes its executors), registers every table of the workload as a temporary view
over exactly its Parquet files, runs the queries' SQL in turn and prints each query's rows on stdout in
the canonical row format (canon.py), followed by a delimiter line (QUERY_DELIMITER), so that pqcache
digests them exactly as it does DuckDB's. It reports its timings to the file $PQCACHE_TIMING_FILE names
(docs/bench.md, "Timing protocol"): once the application is up, the views are registered and a one-row
job has run, "ready_unix_ns=N rss_bytes=N" (the process tree's: Python and its JVM); after each query,
"query=NAME query_ms=F", from the spark.sql() call to the last row collected into the driver (Parquet
and S3 reads included; printing the rows is not); on a cluster, after the last query, what the
executors used (k8s_usage.timing_line: "spark_executors=N spark_executor_peak_bytes=A,B,..
spark_s3_read_bytes=N spark_executor_ms=N"). FILE is the resolved workload `pqcache bench` writes
(Go: bench/workload.Resolved), as for the Polars engine (bench/polars/run.py).

Each table is a DataFrame over exactly its files (no globbing: the runner listed them); s3:// URLs are
read as s3a://. The queries are the workload's SQL, as DuckDB runs it; where Spark's dialect differs,
sql_for() rewrites it (today: nothing; docs/bench.md, "Spark").

Environment:
    PQCACHE_SPARK_MASTER    Spark's master (default local[*]; pqcache bench sets local[N] from --threads,
                            the Kubernetes runner k8s://https://kubernetes.default.svc)
    PQCACHE_SPARK_JARS      a directory of extra jars (hadoop-aws and the AWS SDK bundle, for s3a://),
                            put on the driver's and the executors' class path
    PQCACHE_SPARK_CONF      a file of extra Spark settings, one key=value a line (# comments), applied
                            last, so they override run.py's own (the Kubernetes runner's executor settings)
    PQCACHE_TIMING_FILE     where to report timings (none: not reported)
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL
                            S3 credentials, and the region and endpoint when the workload has none
    AWS_CA_BUNDLE           a CA bundle (PEM) for the S3 endpoint: imported with keytool into a trust
                            store beside the JDK's own CAs, which the driver and executors use
    JAVA_HOME               the Java runtime (17 or later)

Exit status: 0 with the rows on stdout, 2 for a usage error (arguments, the workload file, an unknown
query, the conf file), 1 when a query fails (the reason on stderr).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Written after each query's rows: not a canonical row (it starts with the record separator). Go:
# wire.QueryDelimiter.
QUERY_DELIMITER = "\x1epqcache:end-of-query"
# Lines written to stdout at a time: few system calls.
CHUNK_ROWS = 8192
ROW_NUMBER = "file_row_number"
DEFAULT_MASTER = "local[*]"
# Lines of a failure's detail written to stderr before its summary.
DETAIL_LINES = 12


class UsageError(Exception):
    """A problem with how the engine was called: exit status 2."""


def parse_args(argv):
    """Read the command line."""
    p = argparse.ArgumentParser(prog="run.py", description="Run queries of a resolved workload on Spark.")
    p.add_argument("--workload", required=True, help="the resolved workload (JSON) pqcache bench writes")
    names = p.add_mutually_exclusive_group(required=True)
    names.add_argument("--queries", help="the queries to run in turn, by name, comma-separated")
    names.add_argument("--query", help="one query's name (--queries with one)")
    args = p.parse_args(argv)  # exits with status 2 on a bad command line
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
        if not (by_name[name].get("sql") or "").strip():
            raise UsageError(f"query {name!r} has no sql: Spark runs a query's SQL (a Polars form is Polars' only)")
    return workload, [by_name[n] for n in names]


def read_conf_file(path):
    """The key=value lines of a Spark settings file, in order; blank lines and # comments skipped."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError(f"reading the Spark settings {path}: {e}") from e
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{path}:{n}: want key=value, got {line!r}")
        out.append((key.strip(), value.strip()))
    return out


DEFAULT_REGION = "us-east-1"

ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value, env):
    """A value with ${env:NAME} references, each replaced by the variable of env (empty when unset).
    Spark expands them only where it reads a setting through its typed config entries, not where a
    setting is read by name as a string, so the program expands every line of the settings file itself:
    every reader then sees the driver's pod IP and name."""
    return ENV_REF.sub(lambda m: env.get(m.group(1), ""), value)


def s3a_settings(s3, env):
    """Hadoop's s3a settings (as spark.hadoop.*) for the workload's endpoint, region and addressing and
    the standard AWS environment's credentials. Only what is set is passed, so s3a's own defaults and
    credential chain (a web identity token, say) still apply to the rest."""
    s3 = s3 or {}
    conf = {}

    def put(key, value):
        if value:
            conf["spark.hadoop.fs.s3a." + key] = value

    endpoint = s3.get("Endpoint") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    put("endpoint", endpoint)
    # With no region anywhere, us-east-1, as pqcache's sync, DuckDB and Polars sign: S3-compatible
    # stores that check the region expect it then (versitygw answered s3a's guess with 400 Bad Request).
    put("endpoint.region", s3.get("Region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION)
    if endpoint:
        put("connection.ssl.enabled", "false" if endpoint.startswith("http://") else "true")
    if "PathStyle" in s3:
        # PathStyle: endpoint/bucket/key (most S3-compatible stores); else bucket.endpoint/key, AWS's form.
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true" if s3["PathStyle"] else "false"
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        put("access.key", key)
        put("secret.key", secret)
        if env.get("AWS_SESSION_TOKEN"):
            put("session.token", env["AWS_SESSION_TOKEN"])
            put("aws.credentials.provider", "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider")
        else:
            put("aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
    return conf


_PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.S)


def pem_bodies(text):
    """The certificates of a PEM text, each as its base64 body without white space."""
    return ["".join(m.group(1).split()) for m in _PEM.finditer(text)]


def trust_store(bundle, java_home, workdir):
    """A PKCS12 trust store holding the JDK's own CAs and every certificate of the PEM bundle, made with
    the JDK's keytool: Java reads no PEM bundle itself. keytool imports one certificate per run (a JVM
    start each), so a certificate the JDK already trusts is not imported again: a bundle that is the
    system's own (AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt) costs one listing, a private CA
    one import. Returns its path and password."""
    store, password = os.path.join(workdir, "truststore.p12"), "changeit"
    if not java_home and shutil.which("java"):
        # PySpark's own rule: JAVA_HOME, else java on PATH (bin/java below the home).
        java_home = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("java"))))
    keytool = os.path.join(java_home, "bin", "keytool") if java_home else "keytool"
    try:
        with open(bundle, encoding="ascii") as f:
            wanted = pem_bodies(f.read())
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"reading AWS_CA_BUNDLE {bundle}: {e}") from e
    if not wanted:
        raise UsageError(f"AWS_CA_BUNDLE {bundle} holds no PEM certificate")
    have = set()
    cacerts = os.path.join(java_home or "", "lib", "security", "cacerts")
    if java_home and os.path.exists(cacerts):
        shutil.copyfile(cacerts, store)
        listing = subprocess.run([keytool, "-list", "-rfc", "-keystore", store, "-storepass", password],
                                 check=True, capture_output=True, text=True)
        have = set(pem_bodies(listing.stdout))
    for i, body in enumerate(b for b in dict.fromkeys(wanted) if b not in have):
        path = os.path.join(workdir, f"ca-{i}.pem")
        with open(path, "w", encoding="ascii") as f:
            f.write("-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----\n")
        subprocess.run([keytool, "-importcert", "-noprompt", "-alias", f"pqcache-ca-{i}", "-file", path,
                        "-keystore", store, "-storetype", "PKCS12", "-storepass", password],
                       check=True, capture_output=True)
    return store, password


def jar_class_path(jars_dir):
    """The class path entry for every jar of jars_dir (Java expands dir/*), or None without one."""
    if not jars_dir:
        return None
    if not os.path.isdir(jars_dir):
        raise UsageError(f"PQCACHE_SPARK_JARS {jars_dir} is not a directory")
    return os.path.join(os.path.abspath(jars_dir), "*")


def session_conf(workload, env, workdir):
    """Every Spark setting of the application, in the order it is applied: run.py's own, then the
    lines of $PQCACHE_SPARK_CONF, which override them."""
    conf = {
        "spark.app.name": "pqcache-" + str(workload.get("workload") or "bench"),
        "spark.master": env.get("PQCACHE_SPARK_MASTER") or DEFAULT_MASTER,
        # Dates are printed as dates; a session time zone keeps any timestamp cast the same everywhere.
        "spark.sql.session.timeZone": "UTC",
        # No web UI: it costs start-up and a port, and nothing reads it here.
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.ansi.enabled": "false",
    }
    # The settings file and the jars are checked first: a mistake there is a usage error, found
    # before the trust store costs keytool's runs.
    extra = read_conf_file(env["PQCACHE_SPARK_CONF"]) if env.get("PQCACHE_SPARK_CONF") else []
    extra = [(k, expand_env(v, env)) for k, v in extra]
    cp = jar_class_path(env.get("PQCACHE_SPARK_JARS"))
    if cp:
        conf["spark.driver.extraClassPath"] = cp
        conf["spark.executor.extraClassPath"] = cp
    java_opts = []
    if env.get("AWS_CA_BUNDLE"):
        store, password = trust_store(env["AWS_CA_BUNDLE"], env.get("JAVA_HOME"), workdir)
        java_opts += [f"-Djavax.net.ssl.trustStore={store}", "-Djavax.net.ssl.trustStoreType=PKCS12",
                      f"-Djavax.net.ssl.trustStorePassword={password}"]
    if java_opts:
        conf["spark.driver.extraJavaOptions"] = " ".join(java_opts)
        conf["spark.executor.extraJavaOptions"] = " ".join(java_opts)
    conf.update(s3a_settings(workload.get("s3"), env))
    for key, value in extra:
        conf[key] = value
    return conf


def spark_path(f):
    """A file as Spark reads it: s3:// is Hadoop's s3a://; a local path stays as it is."""
    return "s3a://" + f[len("s3://"):] if f.startswith("s3://") else f


def hive_keys(path):
    """The Hive partition columns a file's path names: the keys of its key=value directories."""
    return [part.split("=", 1)[0] for part in path.split("/")[:-1] if "=" in part]


def hive_base(path):
    """The directory above a file's first key=value directory: Spark's basePath for partition columns."""
    parts = path.split("/")
    for i, part in enumerate(parts[:-1]):
        if "=" in part:
            return "/".join(parts[:i]) or "/"
    return "/".join(parts[:-1])


def read_table(spark, table):
    """A table as one DataFrame over exactly its files.

    Hive columns come from the key=value directories below each file's base (a mixed-direct table
    mixes local and s3a:// files, so files are read in one group per base). file_row_number is each
    row's position in its own file (Spark's _metadata.row_index), placed as DuckDB places it for
    SELECT *: the file's columns, file_row_number, then the Hive columns."""
    files = [spark_path(f) for f in table.get("files") or []]
    if not files:
        raise ValueError("a table without files")
    hive, numbered = bool(table.get("hive")), bool(table.get("fileRowNumber"))
    groups = {}
    for f in files:
        groups.setdefault(hive_base(f) if hive else "", []).append(f)
    frames = []
    for base, paths in groups.items():
        reader = spark.read.option("basePath", base) if hive else spark.read
        df = reader.parquet(*paths)
        if numbered:
            after = hive_keys(paths[0]) if hive else []
            cols = [c for c in df.columns if c not in after]
            df = df.selectExpr(*[f"`{c}`" for c in cols], f"_metadata.row_index AS {ROW_NUMBER}", *[f"`{c}`" for c in after])
        frames.append(df)
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def register_tables(spark, workload):
    """Register every table of the workload as a temporary view, by name. Spark lists the files and
    reads a footer for the schema here, at start-up."""
    for name, table in sorted((workload.get("tables") or {}).items()):
        try:
            read_table(spark, table).createOrReplaceTempView(name)
        except Exception as e:
            raise RuntimeError(f"table {name}: {e}") from e


def sql_for(query):
    """The query's SQL as Spark runs it. The workload's SQL is DuckDB's dialect; TPC-H's 22 run on Spark
    unchanged, so this only strips a trailing semicolon, which spark.sql() refuses."""
    return query["sql"].strip().rstrip(";")


def tree_rss():
    """The resident memory (VmRSS) of this process and its descendants (the JVM), as the runner's
    sampler counts it; 0 if unknown."""
    total, todo, seen = 0, [os.getpid()], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def report(env, line):
    """Append one line to the timing file, if the runner named one."""
    path = env.get("PQCACHE_TIMING_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def on_cluster(conf):
    """Whether the application's executors are pods of their own (a k8s:// master), not the driver's
    threads (local mode)."""
    return str(conf.get("spark.master", "")).startswith("k8s://")


def reads_s3(workload):
    """Whether any table file is read from the bucket."""
    return any(str(f).startswith(("s3://", "s3a://"))
               for table in (workload.get("tables") or {}).values() for f in table.get("files") or [])


def report_executors(spark, conf, workload, env):
    """On a cluster, report what the executors used (k8s_usage): the runner measures only the driver,
    its own container. Done after the last query, before the application stops, so that the probe's
    tasks are no query's time."""
    if not on_cluster(conf) or not env.get("PQCACHE_TIMING_FILE"):
        return
    import k8s_usage

    want = int(conf.get("spark.executor.instances") or 0)
    try:
        line = k8s_usage.timing_line(k8s_usage.usage(spark, want, reads_s3(workload)))
    except Exception as e:  # noqa: BLE001 - the queries' results stand without it
        print(f"run.py: the executors' usage was not measured: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return
    report(env, line)


def wait_for_executors(spark, conf, timeout_s=300):
    """On a cluster master, wait until spark.executor.instances executors have registered, so that
    executor start is start-up and not the first query's time (local mode has none to wait for)."""
    want = int(conf.get("spark.executor.instances") or 0)
    if want <= 0 or str(conf.get("spark.master", "")).startswith("local"):
        return
    tracker = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout_s
    while tracker.getExecutorMemoryStatus().size() - 1 < want:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{want} executors did not register within {timeout_s} s")
        time.sleep(0.2)


def import_canon():
    """The canonical row format (canon.py), shared with the Polars engine: beside this program in an
    engine image, in bench/canon in a checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, "canon.py")):
        sys.path.insert(1, os.path.join(os.path.dirname(here), "canon"))
    import canon

    return canon


def write_rows(canon, kinds, rows, out):
    """Print collected rows in the canonical row format, one line per row."""
    lines = []
    for line in canon.format_rows(rows, kinds):
        lines.append(line)
        if len(lines) == CHUNK_ROWS:
            out.write("\n".join(lines) + "\n")
            lines.clear()
    if lines:
        out.write("\n".join(lines) + "\n")


def start_session(conf):
    """Start the Spark application (the JVM, and on a cluster master its executors)."""
    # Python tasks (the executors' usage probe) run this interpreter, the venv's, on the executors too
    # (the same image): PySpark's default, python3 on the PATH, has no pyspark ("No module named
    # 'pyspark'" from every executor).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Imported here, once the environment is final.
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(args, env):
    """Load the workload, start the application, run the queries in turn and print their rows."""
    workload, queries = load_workload(args.workload, args.names)
    canon = import_canon()

    workdir = tempfile.mkdtemp(prefix="pqcache-spark-")
    spark = None
    try:
        conf = session_conf(workload, env, workdir)
        spark = start_session(conf)
        wait_for_executors(spark, conf)
        register_tables(spark, workload)
        # One job before ready: the scheduler, the code generator and the executors' first task are
        # engine start, not the first query's time.
        spark.range(1).selectExpr("id + 1").collect()
        report(env, f"ready_unix_ns={time.time_ns()} rss_bytes={tree_rss()}")
        for query in queries:
            args.current = query["name"]
            start = time.perf_counter_ns()
            df = spark.sql(sql_for(query))
            rows = df.collect()
            elapsed = time.perf_counter_ns() - start
            kinds = [canon.column_kind(f.name, f.dataType.simpleString()) for f in df.schema.fields]
            report(env, f"query={query['name']} query_ms={elapsed / 1e6:.3f}")
            write_rows(canon, kinds, rows, sys.stdout)
            sys.stdout.write(QUERY_DELIMITER + "\n")
            sys.stdout.flush()
        report_executors(spark, conf, workload, env)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    """Run, mapping failures to the exit status pqcache bench records."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args, os.environ)
    except UsageError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - any failure of the query is the query's result
        # The detail first (a Java exception's message and the head of its stack), the summary last:
        # bench keeps the tail of stderr, which must hold the reason, not the depth of the stack.
        lines = str(e).strip().splitlines()
        if len(lines) > 1:
            print("\n".join(lines[:DETAIL_LINES]), file=sys.stderr)
        print(f"query {getattr(args, 'current', ','.join(args.names))} failed: {type(e).__name__}: {lines[0] if lines else ''}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
