#!/usr/bin/env python3
# delta-testdata.py writes the Delta Lake fixtures under cache/table/delta/testdata/ with delta-rs
# (the `deltalake` Python package), and beside each table an expected.json holding, for every
# version, the live data files as deltalake itself reports them. The Go tests in cache/table/delta
# replay each table's log and compare with that answer at every version, so the fixtures are
# deltalake's word, not ours.
#
# Regenerate (from the repository root; the output replaces the old fixtures):
#   python3 -m venv /tmp/delta-venv
#   /tmp/delta-venv/bin/pip install --require-hashes --no-deps --only-binary :all: \
#     -r hack/delta-testdata-requirements.txt
#   /tmp/delta-venv/bin/python hack/delta-testdata.py cache/table/delta/testdata
#
# Tables stay tiny (a few rows per file) so the fixtures stay well under 300 KB. Timestamps and
# UUIDs in file names change on every run; the tests depend on neither.
import json
import os
import shutil
import sys
import urllib.parse

import pyarrow as pa
import deltalake
from deltalake import DeltaTable, write_deltalake


def rows(ids, region=None):
    cols = {"id": pa.array(ids, pa.int64()), "value": pa.array([i * 10 for i in ids], pa.int64())}
    if region is not None:
        cols["region"] = pa.array([region] * len(ids), pa.string())
    return pa.table(cols)


def appends(path):
    """create + 3 appends: every version adds one file, nothing is removed."""
    write_deltalake(path, rows([1, 2]))
    for start in (3, 5, 7):
        write_deltalake(path, rows([start, start + 1]), mode="append")


def history(path):
    """A partitioned table whose log holds adds, removes, a checkpoint part-way and commits after it.
    One partition value has a space, so its paths are percent-encoded in the log."""
    write_deltalake(path, rows([1, 2], "east"), partition_by=["region"])
    write_deltalake(path, rows([3, 4], "west side"), mode="append")
    write_deltalake(path, rows([5, 6], "east"), mode="append")
    # Overwrite one partition only: removes its files, adds a new one.
    write_deltalake(path, rows([7, 8], "east"), mode="overwrite", predicate="region = 'east'")
    DeltaTable(path).delete("id = 3")  # rewrites the file holding id 3: a remove and an add
    DeltaTable(path).create_checkpoint()
    write_deltalake(path, rows([9], "north"), mode="append")
    DeltaTable(path).delete("region = 'north'")  # removes a whole file, no add
    write_deltalake(path, rows([10, 11], "west side"), mode="append")


def special(path):
    """Partition values with characters that need escaping: delta-rs Hive-escapes them in the
    directory name (a b%c -> a%20b%25c) and then URI-encodes that in add.path (a%2520b%2525c)."""
    write_deltalake(path, rows([1], "a b%c"), partition_by=["region"])
    write_deltalake(path, rows([2], "x=y/z"), mode="append")
    write_deltalake(path, rows([3], "ümlaut#?"), mode="append")
    DeltaTable(path).delete("id = 2")


def live_files(path, version):
    """The live files of one version: object keys relative to the table root, with add.size.

    file_uris() gives the path each file has in storage (the log's URI-encoded add.path decoded
    once); a Hive-escaped partition directory keeps its own escapes, e.g. region=a%20b."""
    dt = DeltaTable(path, version=version)
    root = os.path.abspath(path).rstrip("/") + "/"
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    size_of = {urllib.parse.unquote(p): s for p, s in zip(actions["path"], actions["size_bytes"])}
    files = []
    for uri in dt.file_uris():
        uri = uri.removeprefix("file://")
        if not uri.startswith(root):
            raise SystemExit(f"{uri} is not under {root}")
        key = uri[len(root):]
        files.append({"key": key, "size": size_of[key]})
    return sorted(files, key=lambda f: f["key"])


def expected(path):
    latest = DeltaTable(path).version()
    versions = {}
    for v in range(latest + 1):
        versions[str(v)] = live_files(path, v)
    return {"deltalake": deltalake.__version__, "latest": latest, "versions": versions}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "cache/table/delta/testdata"
    for name, build in (("appends", appends), ("history", history), ("special", special)):
        root = os.path.join(out, name)
        table = os.path.join(root, "table")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        build(table)
        with open(os.path.join(root, "expected.json"), "w") as f:
            json.dump(expected(table), f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
