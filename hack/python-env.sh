#!/usr/bin/env bash
# python-env.sh [VENV] makes the Polars engine's Python environment (default bin/polars-venv): a venv
# of $PYTHON (default python3; CPython 3.11 or later, as Polars 2 requires) holding exactly what
# bench/polars/requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps, so
# every machine runs the same wheels (hack/locked-venv.sh, which keeps one venv per lock on the machine).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${1:-$ROOT/bin/polars-venv}
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "python-env: $PYTHON is $("$PYTHON" -V 2>&1 || echo 'not runnable'); Polars 2 needs CPython 3.11 or later (set PYTHON)" >&2
  exit 1
fi
PYTHON=$PYTHON exec "$ROOT/hack/locked-venv.sh" "$VENV" 'import polars' "$ROOT/bench/polars/requirements.txt"
