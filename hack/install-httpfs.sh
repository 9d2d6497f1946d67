#!/usr/bin/env bash
# install-httpfs.sh DST puts DuckDB's httpfs extension (the s3:// reader) at DST, from the PyPI wheel
# pinned with its hash in hack/httpfs-requirements.txt: DuckDB's own extension host is not reachable
# from here, PyPI is. The extension is signed, so DuckDB loads it without allow_unsigned_extensions,
# and it is built for exactly one DuckDB version (checked below against bench/duckdb's Version). An
# unchanged lock file and DuckDB version cost nothing: DST is rebuilt only when it is older than the lock
# or was checked against another version (DST.version records the one it was).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DST=${1:-$ROOT/bin/httpfs.duckdb_extension}
LOCK=$ROOT/hack/httpfs-requirements.txt
# The footer's DuckDB version must be the one the bindings link (bench/duckdb.Version).
want=$(sed -n 's/^const Version = "\(v[0-9.]*\)".*$/\1/p' "$ROOT/bench/duckdb/duckdb.go")
if [ -z "$want" ]; then
  echo "install-httpfs: cannot read the DuckDB version (const Version) from bench/duckdb/duckdb.go" >&2
  exit 1
fi
if [ -f "$DST" ] && [ "$DST" -nt "$LOCK" ] && [ "$(cat "$DST.version" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: -r "$LOCK" -d "$tmp" >&2
wheel=$(ls "$tmp"/duckdb_extension_httpfs-*.whl)
python3 - "$wheel" "$tmp/httpfs.duckdb_extension" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.endswith("/httpfs.duckdb_extension")]
    if len(names) != 1:
        sys.exit(f"install-httpfs: the wheel holds {names}, want one httpfs.duckdb_extension")
    with z.open(names[0]) as src, open(sys.argv[2], "wb") as dst:
        dst.write(src.read())
PY
if ! tail -c 512 "$tmp/httpfs.duckdb_extension" | grep -aq -- "$want"; then
  echo "install-httpfs: the extension is not for DuckDB $want; pin the duckdb-extension-httpfs release of that version" >&2
  exit 1
fi
mkdir -p "$(dirname "$DST")"
mv "$tmp/httpfs.duckdb_extension" "$DST"
echo "$want" >"$DST.version"
echo "install-httpfs: $DST for DuckDB $want ($(du -h "$DST" | cut -f1))" >&2
