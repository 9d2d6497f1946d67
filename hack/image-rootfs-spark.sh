#!/usr/bin/env bash
# image-rootfs-spark.sh assembles in DIR (default bin/rootfs-spark) the file system of pqcache's Spark
# engine image, which runs a BenchRun's Spark driver (the runner injected, as for Polars) and its
# executors:
#   /usr/lib/jvm/java-17-openjdk-amd64   this machine's Debian OpenJDK 17 (what a headless JRE needs:
#                                        java, keytool, lib/ without the GUI and the JDK's build files),
#                                        with the shared libraries ldd finds for it;
#   /usr/local/bin/python3.X             the CPython of bin/spark-venv, its standard library and libraries;
#   /usr/local/lib/pqcache/spark/venv    bin/spark-venv's site-packages (hack/spark-env.sh: pyspark,
#                                        whose jars hold Spark and its Kubernetes scheduler);
#   /usr/local/lib/pqcache/spark/jars    bin/spark-jars (hack/spark-jars.sh: hadoop-aws and the AWS SDK
#                                        bundle at pyspark's Hadoop version, for s3a://);
#   /usr/local/lib/pqcache/spark/        run.py (bench/spark: the driver's program) with canon.py
#                                        (bench/canon, which the Polars engine shares) and
#                                        executor.py (an executor's entrypoint: the pod template's command)
#                                        and k8s_usage.py (what run.py reports of the executors);
# CA certificates (PEM for Python, the JRE's cacerts for Java) and the nonroot user 65532.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/bin/rootfs-spark}
VENV=${SPARK_VENV:-$ROOT/bin/spark-venv}
JARS=${SPARK_JARS:-$ROOT/bin/spark-jars}
JRE=${SPARK_JRE:-/usr/lib/jvm/java-17-openjdk-amd64}
PROGRAM=/usr/local/lib/pqcache/spark

# The venv and the jars, pinned with hashes by their scripts (nothing to do when they are current).
"$ROOT/hack/spark-env.sh" "$VENV"
"$ROOT/hack/spark-jars.sh" "$JARS"
[[ -x $JRE/bin/java ]] || {
  echo "image-rootfs-spark: no JRE at $JRE (apt-get install openjdk-17-jre-headless)" >&2
  exit 1
}
read -r base_exe base_prefix ver < <("$VENV/bin/python" -c '
import os, sys
print(os.path.realpath(sys._base_executable), sys.base_prefix, "%d.%d" % sys.version_info[:2])')
stdlib=$base_prefix/lib/python$ver

rm -rf "$OUT"
mkdir -p "$OUT/usr/local/bin" "$OUT/usr/local/lib" "$OUT$PROGRAM/jars" "$OUT/etc/ssl/certs" "$OUT/tmp" "$OUT$JRE"
chmod 1777 "$OUT/tmp"

# The JRE, symlinks into /etc and /usr/share resolved. Left out: the JDK's tools and build files, and
# the GUI libraries (AWT on X11, the splash screen, accessibility), whose X11 dependencies the image
# does not have.
for d in bin lib conf release; do
  cp -a "$JRE/$d" "$OUT$JRE/"
done
# Debian links the configuration and the CA store into /etc: the files themselves go in; a link to
# what this machine lacks (src.zip without the JDK's sources) goes.
find "$OUT$JRE" -type l | while read -r link; do
  target=$(readlink -f "$JRE${link#"$OUT$JRE"}" || true)
  rm "$link"
  if [[ -e $target ]]; then cp -rL "$target" "$link"; fi
done
find "$OUT$JRE/bin" -type f ! -name java ! -name keytool -delete
rm -f "$OUT$JRE/lib/"{ct.sym,src.zip,libawt_xawt.so,libsplashscreen.so,libjawt.so,libatk-wrapper.so}
rm -rf "$OUT$JRE/lib/jfr"

# CPython at /usr/local, its standard library without tests, IDLE and Tk.
cp -L "$base_exe" "$OUT/usr/local/bin/python$ver"
ln -s "python$ver" "$OUT/usr/local/bin/python3"
cp -a "$stdlib" "$OUT/usr/local/lib/"
for d in site-packages test idlelib tkinter turtledemo ensurepip lib2to3 "config-$ver-"*; do
  rm -rf "$OUT/usr/local/lib/python$ver/"$d
done
rm -f "$OUT/usr/local/lib/python$ver/lib-dynload/"{_tkinter,_test,_xx,xx}*
mkdir -p "$OUT/usr/local/lib/python$ver/site-packages"

# The venv at the program's path; pyspark finds the JRE through JAVA_HOME (the BenchRun's driver and
# executor containers set it; executor.py defaults to it) and its own jars inside its package.
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
cp "$JARS/"*.jar "$OUT$PROGRAM/jars/"
for f in spark/run.py canon/canon.py spark/executor.py spark/k8s_usage.py; do
  [[ -f $ROOT/bench/$f ]] || {
    echo "image-rootfs-spark: bench/$f is missing" >&2
    exit 1
  }
  cp "$ROOT/bench/$f" "$OUT$PROGRAM/"
done

# PySpark starts its JVM through bin/spark-submit and bin/spark-class, which are bash scripts
# (#!/usr/bin/env bash) calling dirname, head and ps (and Spark deletes its temporary directories with rm): Debian's, at /usr/bin, with /bin beside it as
# on Debian (merged /usr). Nothing else of a shell's tools is added.
tools=(bash env dirname head ps rm)
mkdir -p "$OUT/usr/bin"
for t in "${tools[@]}"; do
  cp -L "$(command -v "$t")" "$OUT/usr/bin/$t"
done
ln -sfn usr/bin "$OUT/bin"

# The native libraries inside the jars (zstd-jni, snappy, lz4 and the like, which Parquet's codecs load
# at their first page): each is unpacked to a temporary directory at run time, and needs its own shared
# libraries in the image (zstd-jni links libpthread.so.0, which nothing else here needs: without it every
# zstd page failed with "Could not initialize class com.github.luben.zstd.RecyclingBufferPool").
jar_natives=$(mktemp -d)
trap 'rm -rf "$jar_natives"' EXIT
"$VENV/bin/python" - "$jar_natives" "$site"/pyspark/jars/*.jar "$OUT$PROGRAM"/jars/*.jar <<'PY'
import os, re, sys, zipfile
out = sys.argv[1]
for k, jar in enumerate(sys.argv[2:]):
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.endswith(".so") and re.search(r"(?i)linux.*(x86_64|amd64)", name):
                z.extract(name, os.path.join(out, str(k)))
PY

# Shared libraries of the JVM, the interpreter, the tools above and their native modules, where the loader looks;
# libpython (under the interpreter's prefix) beside libc.
loader_dir=$(dirname "$(ldd "$base_exe" | awk '$1 == "libc.so.6" {print $3}')")
libs=$(
  {
    ldd "$base_exe" "$OUT$JRE/bin/java"
    for t in "${tools[@]}"; do ldd "$OUT/usr/bin/$t"; done
    find "$OUT$JRE/lib" "$OUT/usr/local/lib/python$ver/lib-dynload" "$site" "$jar_natives" -name '*.so' -exec ldd {} \;
  } 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u
)
for lib in $libs; do
  case $lib in
  "$OUT"/*) continue ;; # the JRE's own, found by its RUNPATH
  "$base_prefix"/*) dest=$loader_dir/$(basename "$lib") ;;
  *) dest=$lib ;;
  esac
  mkdir -p "$OUT$(dirname "$dest")"
  cp -L "$lib" "$OUT$dest"
done

# Unchecked-hash bytecode: the layer's files all carry one mtime (image-rootfs-polars.sh says why).
"$VENV/bin/python" -m compileall -q -f -j 0 --invalidation-mode unchecked-hash -s "$OUT" -p / \
  "$OUT/usr/local/lib/python$ver" "$site" "$OUT$PROGRAM" >/dev/null

cp -L /etc/ssl/certs/ca-certificates.crt "$OUT/etc/ssl/certs/"
echo 'root:x:0:0:root:/root:/sbin/nologin' >"$OUT/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >>"$OUT/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$OUT/etc/group"
"$OUT$JRE/bin/java" -version 2>&1 | head -1 >&2
echo "image-rootfs-spark: Python $ver, $("$VENV/bin/python" -c 'import importlib.metadata as m; print("pyspark", m.version("pyspark"))'), $(ls "$OUT$PROGRAM/jars" | wc -l) s3a jars, $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1) in $OUT" >&2
