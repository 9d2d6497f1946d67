#!/usr/bin/env bash
# spark-env.sh [VENV] makes the Spark engine's Python environment (default bin/spark-venv): a venv of
# $PYTHON (default python3; CPython 3.11 or later, as PySpark 4.3 requires) holding exactly what
# bench/spark/requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps. It is
# hack/python-env.sh for Spark, with two differences: PyPI has PySpark 4.3.0 as a source distribution
# only, so pip builds it here (--no-binary pyspark; Py4J stays --only-binary), with the venv's own
# setuptools, pinned in bench/spark/build-requirements.txt and installed first (--no-build-isolation:
# no unpinned build requirement is fetched); and Spark needs a Java
# runtime, 17 or later, which it checks for (Debian: apt-get install openjdk-17-jre-headless). It does
# nothing while the venv imports PySpark and holds a copy of the lock files equal to the current one;
# a changed lock file rebuilds the venv from scratch.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${1:-$ROOT/bin/spark-venv}
LOCK=$ROOT/bench/spark/requirements.txt
BUILD_LOCK=$ROOT/bench/spark/build-requirements.txt
PYTHON=${PYTHON:-python3}
# The copy of the lock file is written last: its presence says the install finished.
STAMP=$VENV/requirements.txt

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

if cat "$BUILD_LOCK" "$LOCK" | cmp -s - "$STAMP" && "$VENV/bin/python" -c 'import pyspark' 2>/dev/null; then
  exit 0
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "spark-env: $PYTHON is $("$PYTHON" -V 2>&1 || echo 'not runnable'); PySpark 4.3 needs CPython 3.11 or later (set PYTHON)" >&2
  exit 1
fi
start=$(date +%s)
echo "spark-env: creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])') (building PySpark from its 456 MB source distribution takes a minute or two)" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  --require-hashes --no-deps --only-binary :all: -r "$BUILD_LOCK"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  --require-hashes --no-deps --no-build-isolation --no-binary pyspark --only-binary py4j -r "$LOCK"
cat "$BUILD_LOCK" "$LOCK" >"$STAMP"
echo "spark-env: $("$VENV/bin/python" -c 'import pyspark; print("pyspark", pyspark.__version__)') ready in $(($(date +%s) - start))s" >&2
