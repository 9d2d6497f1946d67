#!/usr/bin/env bash
# python-env.sh [VENV] makes the Polars engine's Python environment (default bin/polars-venv): a venv
# of $PYTHON (default python3; CPython 3.11 or later, as Polars 2 requires) holding exactly what
# bench/polars/requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps, so
# every machine runs the same wheels. It does nothing while the venv runs Polars and holds a copy of
# the lock file equal to the current one; a changed lock file rebuilds the venv from scratch (an
# upgrade in place could leave files of the old version behind).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${1:-$ROOT/bin/polars-venv}
LOCK=$ROOT/bench/polars/requirements.txt
PYTHON=${PYTHON:-python3}
# The copy of the lock file is written last: its presence says the install finished.
STAMP=$VENV/requirements.txt

if cmp -s "$LOCK" "$STAMP" && "$VENV/bin/python" -c 'import polars' 2>/dev/null; then
  exit 0
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "python-env: $PYTHON is $("$PYTHON" -V 2>&1 || echo 'not runnable'); Polars 2 needs CPython 3.11 or later (set PYTHON)" >&2
  exit 1
fi
start=$(date +%s)
echo "python-env: creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  --require-hashes --no-deps --only-binary :all: -r "$LOCK"
cp "$LOCK" "$STAMP"
echo "python-env: $("$VENV/bin/python" -c 'import polars; print("polars", polars.__version__)') ready in $(($(date +%s) - start))s" >&2
