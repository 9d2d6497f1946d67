#!/usr/bin/env bash
# spark-s3-bytes.sh: how many of the bytes Spark reads over s3a its counters see, with Parquet's
# vectored reads (Spark 4's default) and without. TPC-H's lineitem in versitygw on 127.0.0.1, one
# scan of three columns in local mode, then the task input bytes (what BenchRuns report as
# spark.s3ReadBytes) and s3a's global bytesRead (docs/benchmarks.md, Spark on the local cluster).
#
#   hack/bench/spark-s3-bytes.sh LINEITEM_PARQUET     # e.g. from pqcache datagen --scale 1
#
# Needs make spark-env (bin/spark-venv, bin/spark-jars) and bin/pqcache. Environment: S3_PORT (7393).
set -euo pipefail
FILE=${1:?usage: hack/bench/spark-s3-bytes.sh LINEITEM_PARQUET}
WORK=$(mktemp -d)
S3_PORT=${S3_PORT:-7393}
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
start_s3 "$WORK/s3"
mkdir -p "$WORK/up" && cp "$FILE" "$WORK/up/lineitem.parquet"
"$ROOT/bin/pqcache" s3 put "$WORK/up" s3://lake/t/ --endpoint "$S3" --path-style >&2
for vectored in true false; do
	AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY \
		"$ROOT/bin/spark-venv/bin/python" "$ROOT/hack/bench/spark-s3-bytes.py" "$S3" s3a://lake/t/lineitem.parquet \
		"$ROOT/bin/spark-jars" "$vectored" 2>/dev/null | grep '^vectored='
done
