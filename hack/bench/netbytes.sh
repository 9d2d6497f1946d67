#!/usr/bin/env bash
# netbytes.sh: what each query reads over the network, per input path, as `pqcache bench` counts it
# (networkReadBytes: the network namespace's receive counters before and after each iteration). The
# script runs in a network namespace of its own (`unshare -n`, so it needs root; it changes nothing on
# the host), where versitygw on 127.0.0.1 and the queries are the loopback's only traffic: the figures
# are the queries' own, not the machine's. Prints one Markdown table.
#
#   hack/bench/netbytes.sh DATA_DIR            # e.g. the output of pqcache datagen --scale 1
#
# Environment: ENGINE (polars), QUERIES (1-22), THREADS (2), S3_PORT (7391), WORK (a temporary
# directory; the bucket's copy of the data goes there).
set -euo pipefail
DATA=${1:?usage: hack/bench/netbytes.sh DATA_DIR}
DATA=$(cd "$DATA" && pwd)
if [ -z "${PQCACHE_NETNS:-}" ]; then
	exec env PQCACHE_NETNS=1 unshare -n "$0" "$@"
fi
ip link set lo up

WORK=${WORK:-$(mktemp -d)}
S3_PORT=${S3_PORT:-7391}
ENGINE=${ENGINE:-polars}
QUERIES=${QUERIES:-1-22}
THREADS=${THREADS:-2}
# shellcheck source=hack/bench/lib.sh
. "$(dirname "$0")/lib.sh"
PQ=$ROOT/bin/pqcache

start_s3 "$WORK/s3"
s3=(--endpoint "$S3" --region us-east-1 --path-style)
"$PQ" s3 put "$DATA" s3://tpch/data/ "${s3[@]}" >&2
common=(bench --engine "$ENGINE" --queries "$QUERIES" --iterations 1 --warmups 0 --threads "$THREADS" --net-interfaces lo)
log "queries over s3://tpch/data"
"$PQ" "${common[@]}" --data s3://tpch/data "${s3[@]}" --probe-streams 4 --probe-bytes -1 --json "$WORK/s3.json" >/dev/null
log "queries over $DATA"
"$PQ" "${common[@]}" --data "$DATA" --probe-streams 4 --probe-bytes -1 --json "$WORK/volume.json" >/dev/null

echo "data: $(find "$DATA" -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}') bytes in $(find "$DATA" -name '*.parquet' | wc -l) files; engine $ENGINE, $THREADS threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| query | s3 median | s3 network read | volume median | volume network read |"
echo "|---|---|---|---|---|"
jq -r -s '.[0].queries as $s | .[1].queries as $v | range(0; $s|length) as $i |
	"| \($s[$i].query) | \($s[$i].medianMillis // 0) ms | \($s[$i].networkReadBytes // 0) | \($v[$i].medianMillis // 0) ms | \($v[$i].networkReadBytes // 0) |"' \
	"$WORK/s3.json" "$WORK/volume.json"
jq -r -s '"| run | \(.[0].geometricMeanMillis) ms | \(.[0].networkReadBytes // 0) | \(.[1].geometricMeanMillis) ms | \(.[1].networkReadBytes // 0) |",
	"", "probe, 4 streams: s3 \(.[0].probe.bytes) bytes at \(.[0].probe.bytesPerSecond / 1048576 | floor) MiB/s; volume \(.[1].probe.bytes) bytes at \(.[1].probe.bytesPerSecond / 1048576 | floor) MiB/s"' \
	"$WORK/s3.json" "$WORK/volume.json"
