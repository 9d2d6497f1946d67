#!/usr/bin/env bash
# moto-env.sh [VENV] makes the venv of moto's server (default bin/moto-venv): exactly what
# hack/moto-requirements.txt pins, installed from PyPI with pip's --require-hashes --no-deps
# (hack/locked-venv.sh). The tests start the server themselves (test/mototest), on 127.0.0.1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec "$ROOT/hack/locked-venv.sh" "${1:-$ROOT/bin/moto-venv}" 'import moto.server' "$ROOT/hack/moto-requirements.txt"
