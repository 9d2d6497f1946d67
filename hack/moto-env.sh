#!/usr/bin/env bash
# moto-env.sh [VENV] makes the venv of moto's server (default bin/moto-venv): exactly what
# hack/moto-requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps. It does
# nothing while the venv runs moto and holds a copy of the lock equal to the current one; a changed
# lock rebuilds it from scratch. The tests start the server themselves (test/mototest), on 127.0.0.1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${1:-$ROOT/bin/moto-venv}
LOCK=$ROOT/hack/moto-requirements.txt
PYTHON=${PYTHON:-python3}
# The copy of the lock is written last: its presence says the install finished.
if cmp -s "$LOCK" "$VENV/requirements.txt" && "$VENV/bin/python" -c 'import moto.server' 2>/dev/null; then
  exit 0
fi
start=$(date +%s)
echo "moto-env: installing moto into $VENV from $LOCK" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  --require-hashes --no-deps --only-binary :all: -r "$LOCK"
cp "$LOCK" "$VENV/requirements.txt"
echo "moto-env: moto $("$VENV/bin/python" -c 'import moto; print(moto.__version__)') ready in $(($(date +%s) - start))s" >&2
