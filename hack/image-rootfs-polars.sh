#!/usr/bin/env bash
# image-rootfs-polars.sh assembles in DIR (default bin/rootfs-polars) the file system of pqcache's Polars
# engine image (Dockerfile.polars): the CPython that builds bin/polars-venv (hack/python-env.sh), at
# /usr/local/bin/python3.X with its standard library and the shared libraries ldd finds for it and its
# extension modules; a virtual environment at /usr/local/lib/pqcache/polars/venv holding the venv's
# site-packages (Polars exactly as bench/polars/requirements.txt pins it, no pip); pqcache's Polars
# program (bench/polars/run.py, with bench/canon/canon.py, which the Spark engine shares) beside it;
# CA certificates; the nonroot user 65532. No pqcache binary: BenchRun Jobs inject the static runner,
# which finds run.py at /usr/local/lib/pqcache/polars and its interpreter in the venv beside it. The
# image's entrypoint is
#   /usr/local/lib/pqcache/polars/venv/bin/python /usr/local/lib/pqcache/polars/run.py
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/bin/rootfs-polars}
VENV=${POLARS_VENV:-$ROOT/bin/polars-venv}
PROGRAM=/usr/local/lib/pqcache/polars

# The venv, exactly as the lock file pins it (nothing to do when it already is).
"$ROOT/hack/python-env.sh" "$VENV"
# The interpreter the venv was made with, where its standard library and libpython are.
read -r base_exe base_prefix ver < <("$VENV/bin/python" -c '
import os, sys
print(os.path.realpath(sys._base_executable), sys.base_prefix, "%d.%d" % sys.version_info[:2])')
stdlib=$base_prefix/lib/python$ver

rm -rf "$OUT"
mkdir -p "$OUT/usr/local/bin" "$OUT/usr/local/lib" "$OUT$PROGRAM" "$OUT/etc/ssl/certs" "$OUT/tmp"
chmod 1777 "$OUT/tmp"

# CPython at /usr/local: it finds its standard library from its own path (bin/../lib/pythonX.Y).
cp -L "$base_exe" "$OUT/usr/local/bin/python$ver"
ln -s "python$ver" "$OUT/usr/local/bin/python3"
# The standard library without what a query never imports: tests, IDLE, Tk, the build configuration,
# pip's bootstrap, and the interpreter's own site-packages (the venv has Polars).
cp -a "$stdlib" "$OUT/usr/local/lib/"
for d in site-packages test idlelib tkinter turtledemo ensurepip lib2to3 "config-$ver-"*; do
  rm -rf "$OUT/usr/local/lib/python$ver/"$d
done
rm -f "$OUT/usr/local/lib/python$ver/lib-dynload/"{_tkinter,_test,_xx,xx}*
# Bytecode for python -O and -OO, which nothing here runs.
find "$OUT/usr/local/lib/python$ver" -name '*.opt-[12].pyc' -delete
mkdir -p "$OUT/usr/local/lib/python$ver/site-packages"

# The venv: its configuration points at the interpreter above; its site-packages are the lock's.
venv=$OUT$PROGRAM/venv
site=$venv/lib/python$ver/site-packages
mkdir -p "$venv/bin" "$site"
printf 'home = /usr/local/bin\ninclude-system-site-packages = false\nversion = %s\n' \
  "$("$VENV/bin/python" -c 'import platform; print(platform.python_version())')" >"$venv/pyvenv.cfg"
ln -s "/usr/local/bin/python$ver" "$venv/bin/python"
ln -s python "$venv/bin/python3"
for d in "$VENV/lib/python$ver/site-packages/"*; do
  case $(basename "$d") in
  pip | pip-* | setuptools | setuptools-* | _distutils_hack | pkg_resources | distutils-precedence.pth | __pycache__) ;;
  *) cp -a "$d" "$site/" ;;
  esac
done
cp "$ROOT/bench/polars/run.py" "$ROOT/bench/canon/canon.py" "$ROOT/bench/polars/requirements.txt" "$OUT$PROGRAM/"

# Shared libraries of the interpreter, its extension modules and Polars' runtime, at the paths the
# dynamic loader looks for them; those under the interpreter's own prefix (libpython, which its
# RUNPATH finds on the build machine only) go to the loader's default directory, beside libc.
loader_dir=$(dirname "$(ldd "$base_exe" | awk '$1 == "libc.so.6" {print $3}')")
libs=$(
  {
    ldd "$base_exe"
    find "$OUT/usr/local/lib/python$ver/lib-dynload" "$site" -name '*.so' -exec ldd {} \;
  } 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u
)
for lib in $libs; do
  dest=$lib
  case $lib in
  "$base_prefix"/*) dest=$loader_dir/$(basename "$lib") ;;
  esac
  mkdir -p "$OUT$(dirname "$dest")"
  cp -L "$lib" "$OUT$dest"
done

# Bytecode that Python trusts without looking at the source's mtime (PEP 552's unchecked-hash .pyc):
# image layers carry every file with one fixed mtime (the local cluster's writer sets the epoch, for
# reproducible layers), which no timestamp-checked .pyc matches, so every query process compiled the
# standard library and Polars again (0.8 s of `import polars` instead of 0.3) and could not keep the
# result on the read-only root file system. The recorded paths are the image's.
"$VENV/bin/python" -m compileall -q -f -j 0 --invalidation-mode unchecked-hash -s "$OUT" -p / \
  "$OUT/usr/local/lib/python$ver" "$site" "$OUT$PROGRAM" >/dev/null

cp -L /etc/ssl/certs/ca-certificates.crt "$OUT/etc/ssl/certs/"
echo 'root:x:0:0:root:/root:/sbin/nologin' >"$OUT/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >>"$OUT/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/etc/group"
echo "image-rootfs-polars: Python $ver, $("$VENV/bin/python" -c 'import importlib.metadata as m; print("polars", m.version("polars"))'), $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1) in $OUT" >&2
