#!/usr/bin/env bash
# locked-venv.sh VENV CHECK LOCK... makes VENV a Python venv holding exactly what the LOCK files pin
# with hashes, installed from PyPI in their order with pip's --require-hashes --no-deps, so every
# machine runs the same wheels. CHECK is Python code that must run in the venv (`import polars`).
#
# A lock file says how pip installs it in a line `# pip-args: ...` (default: --only-binary :all:, wheels
# only); the Spark lock builds PySpark from its source distribution that way.
#
# Venvs are kept once per machine, not per checkout: the venv is built under
# $PQCACHE_CACHE_DIR/venvs (default ~/.cache/pqcache/venvs), named by a hash of the lock files and the
# interpreter's version, and VENV is a link to it. A fresh clone (CI's) finds the venv its locks name
# and installs nothing; a changed lock names a new venv, built from scratch (an upgrade in place could
# leave files of the old version behind). A venv is complete once its copy of the locks is written,
# last, so a build cut off half-way is built again. When the cache
# directory cannot be written, the venv is built at VENV itself.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: locked-venv.sh VENV CHECK LOCK..." >&2
  exit 2
fi
VENV=$1 CHECK=$2
shift 2
PYTHON=${PYTHON:-python3}
name=$(basename "$VENV")

pyversion=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')
key=$( (echo "$pyversion"; cat "$@") | sha256sum | cut -c1-16)
cache=${PQCACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pqcache}/venvs
target=$cache/$name-$key

# complete DIR LOCK... says whether DIR is a finished venv of these locks that runs CHECK.
complete() {
  local dir=$1
  shift
  cat "$@" | cmp -s - "$dir/.locks" && "$dir/bin/python" -c "$CHECK" 2>/dev/null
}

# pip_args LOCK prints the pip flags LOCK's `# pip-args:` line names, or the default.
pip_args() {
  local line
  line=$(sed -n 's/^# pip-args: //p' "$1" | head -n1)
  echo "${line:---only-binary :all:}"
}

# build DIR creates a venv at DIR and installs every lock into it, the copy of the locks last.
build() {
  local dir=$1 lock
  shift
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  for lock in "$@"; do
    # shellcheck disable=SC2046 # the flags are words
    "$dir/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
      --require-hashes --no-deps $(pip_args "$lock") -r "$lock"
  done
  cat "$@" >"$dir/.locks"
}

if complete "$VENV" "$@"; then
  exit 0
fi
start=$(date +%s)
if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
  # One build of a venv at a time on this machine (two checkouts may ask at once); built where it
  # lives, since a venv's scripts name their own path.
  exec 9>"$target.lock"
  flock 9
  if ! complete "$target" "$@"; then
    echo "locked-venv: installing $* into $target with $PYTHON $pyversion" >&2
    build "$target" "$@"
  fi
  flock -u 9
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  ln -s "$target" "$VENV"
else
  echo "locked-venv: $cache cannot be written; installing $* into $VENV" >&2
  build "$VENV" "$@"
fi
echo "locked-venv: $VENV ready in $(($(date +%s) - start))s" >&2
