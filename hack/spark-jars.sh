#!/usr/bin/env bash
# spark-jars.sh [DIR] fetches the jars that Spark's s3a:// needs beyond PySpark's own (hadoop-aws and
# the AWS SDK bundle at the versions PySpark's Hadoop asks for), as bench/spark/jars.txt pins them
# (group:artifact:version sha256) into DIR (default bin/spark-jars), by their coordinates with Maven's
# own client (maven-dependency-plugin's copy goal, at the version pinned below, from the repositories
# this machine's Maven is set up with: Maven Central), checking each file's SHA-256. A jar already
# there with the pinned sum is kept; one with another sum is fetched again; a jar not pinned any more
# is removed, so DIR holds exactly the pinned set (Spark loads every jar it is given). The AWS bundle
# is 686 MB: the first run takes a while.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$ROOT/bin/spark-jars}
LIST=$ROOT/bench/spark/jars.txt
# The plugin that copies an artifact by its coordinates; Maven resolves it like any other artifact.
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.11.0
command -v mvn >/dev/null || { echo "spark-jars: mvn (Apache Maven) is needed: apt-get install maven" >&2; exit 1; }

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
  echo "spark-jars: fetching $coord with mvn" >&2
  stage=$(mktemp -d)
  if ! mvn -q -B "$DEPENDENCY_PLUGIN:copy" -Dartifact="$coord:jar" -DoutputDirectory="$stage" >&2; then
    rm -rf "$stage"
    echo "spark-jars: mvn could not fetch $coord" >&2
    exit 1
  fi
  if ! echo "$sum  $stage/$jar" | sha256sum --check --status; then
    echo "spark-jars: $coord has sha256 $(sha256sum "$stage/$jar" | cut -d' ' -f1), $LIST pins $sum" >&2
    rm -rf "$stage"
    exit 1
  fi
  mv "$stage/$jar" "$DIR/$jar"
  rm -rf "$stage"
done <"$LIST"
for f in "$DIR"/*; do
  [[ -e $f ]] || continue
  name=$(basename "$f")
  [[ -n ${want[$name]:-} ]] || { echo "spark-jars: removing $name (not in $LIST)" >&2; rm -f "$f"; }
done
