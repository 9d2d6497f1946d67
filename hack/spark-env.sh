#!/usr/bin/env bash
# spark-env.sh [VENV] makes the Spark engine's Python environment (default bin/spark-venv): a venv of
# $PYTHON (default python3; CPython 3.11 or later, as PySpark 4.3 requires) holding exactly what
# bench/spark/requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps. It is
# hack/python-env.sh for Spark (hack/locked-venv.sh), with two differences: PyPI has PySpark 4.3.0 as
# a source distribution only, so pip builds it here (the lock's pip-args line: --no-binary pyspark;
# Py4J stays --only-binary), with the venv's own setuptools, pinned in
# bench/spark/build-requirements.txt and installed first (--no-build-isolation: no unpinned build
# requirement is fetched); and Spark needs a Java runtime, 17 or later, which it checks for (Debian:
# apt-get install openjdk-17-jre-headless). Building PySpark from its 456 MB source distribution takes
# a minute or two, once per machine.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${1:-$ROOT/bin/spark-venv}
LOCK=$ROOT/bench/spark/requirements.txt
BUILD_LOCK=$ROOT/bench/spark/build-requirements.txt
PYTHON=${PYTHON:-python3}

java_major() {
  # `java -version` prints e.g. `openjdk version "17.0.15" 2025-04-15` (or "1.8.0_x" before 9) on stderr.
  local v
  v=$("${JAVA_HOME:+$JAVA_HOME/bin/}java" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n1)
  v=${v#1.}
  echo "${v%%[.+-]*}"
}
major=$(java_major 2>/dev/null || true)
if [[ -z $major || ! $major =~ ^[0-9]+$ || $major -lt 17 ]]; then
  echo "spark-env: Spark 4 needs Java 17 or later, found ${major:-none} (${JAVA_HOME:+JAVA_HOME=$JAVA_HOME, }PATH java: $(command -v java || echo missing));" \
    "on Debian: apt-get install openjdk-17-jre-headless, or set JAVA_HOME" >&2
  exit 1
fi

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "spark-env: $PYTHON is $("$PYTHON" -V 2>&1 || echo 'not runnable'); PySpark 4.3 needs CPython 3.11 or later (set PYTHON)" >&2
  exit 1
fi
PYTHON=$PYTHON exec "$ROOT/hack/locked-venv.sh" "$VENV" 'import pyspark' "$BUILD_LOCK" "$LOCK"
