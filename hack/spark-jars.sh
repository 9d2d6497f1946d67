#!/usr/bin/env bash
# spark-jars.sh [DIR] fetches the jars that Spark's s3a:// needs beyond PySpark's own (hadoop-aws and
# the AWS SDK bundle at the versions PySpark's Hadoop asks for), as bench/spark/jars.txt pins them
# (group:artifact:version sha256), from Maven Central into DIR (default bin/spark-jars), checking each
# file's SHA-256. A jar already there with the pinned sum is kept; one with another sum is fetched
# again; a jar not pinned any more is removed, so DIR holds exactly the pinned set (Spark loads every
# jar it is given). The AWS bundle is 686 MB: the first run takes a while.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$ROOT/bin/spark-jars}
LIST=$ROOT/bench/spark/jars.txt
REPO=${MAVEN_REPO:-https://repo1.maven.org/maven2}

mkdir -p "$DIR"
declare -A want=()
while read -r coord sum; do
  [[ -z $coord || $coord == \#* ]] && continue
  IFS=: read -r group artifact version <<<"$coord"
  if [[ -z $group || -z $artifact || -z $version || ! $sum =~ ^[0-9a-f]{64}$ ]]; then
    echo "spark-jars: bad line in $LIST: $coord $sum" >&2
    exit 1
  fi
  jar=$artifact-$version.jar
  want[$jar]=1
  if [[ -f $DIR/$jar ]] && echo "$sum  $DIR/$jar" | sha256sum --check --status; then
    continue
  fi
  url=$REPO/${group//.//}/$artifact/$version/$jar
  echo "spark-jars: fetching $url" >&2
  curl -fsSL --retry 3 -o "$DIR/$jar.part" "$url"
  if ! echo "$sum  $DIR/$jar.part" | sha256sum --check --status; then
    echo "spark-jars: $url has sha256 $(sha256sum "$DIR/$jar.part" | cut -d' ' -f1), $LIST pins $sum" >&2
    rm -f "$DIR/$jar.part"
    exit 1
  fi
  mv "$DIR/$jar.part" "$DIR/$jar"
done <"$LIST"
for f in "$DIR"/*; do
  [[ -e $f ]] || continue
  name=$(basename "$f")
  [[ -n ${want[$name]:-} ]] || { echo "spark-jars: removing $name (not in $LIST)" >&2; rm -f "$f"; }
done
