#!/usr/bin/env bash
# sync.sh measures pqcache sync against rclone and `aws s3 sync`, side by side in one run, on the same
# data served by a local versitygw (through a request-counting proxy), at equal parallelism:
#   - a full sync of ~2 GiB: 10,240 objects of 100 KiB in 10 tables, plus 4 objects of 256 MiB;
#   - an unchanged re-sync of the same prefix (wall time and requests);
#   - pqcache's peak RSS on one 2 GiB object, to show memory does not follow file size.
# Prints a Markdown table. Needs rclone and awscli (Debian packages) and GNU time. Traffic stays on
# 127.0.0.1. Usage: hack/bench/sync.sh [WORKDIR]   (default /tmp/pqcache-bench; ~9 GB of disk)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${1:-/tmp/pqcache-bench}
PARALLEL=${PARALLEL:-8}
S3_PORT=${S3_PORT:-7170}
PROXY_PORT=${PROXY_PORT:-7171}
AWS=${AWS:-/usr/bin/aws}   # Debian's awscli v2, not a pip shim earlier in PATH
for tool in rclone "$AWS" /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "sync.sh: $tool not found (apt-get install rclone awscli time)" >&2; exit 1; }
done

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
cd "$ROOT"
make -s build versitygw >&2
go build -o bin/countproxy ./hack/bench/countproxy
PQCACHE=$ROOT/bin/pqcache

mkdir -p "$WORK"
rm -rf "$WORK/s3" "$WORK/dest" "$WORK/src"
mkdir -p "$WORK/s3" "$WORK/src"
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=$WORK/aws-config
unset AWS_CA_BUNDLE AWS_PROFILE
printf '[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = %s\n' "$PARALLEL" >"$AWS_CONFIG_FILE"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  bin/versitygw --port "127.0.0.1:$S3_PORT" --health /health posix "$WORK/s3" >"$WORK/versitygw.log" 2>&1 &
pids+=($!)
bin/countproxy -listen "127.0.0.1:$PROXY_PORT" -target "http://127.0.0.1:$S3_PORT" 2>"$WORK/proxy.log" &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$S3_PORT/health" >/dev/null && curl -sf "http://127.0.0.1:$PROXY_PORT/__counts" >/dev/null && break; sleep 0.1; done
DIRECT=http://127.0.0.1:$S3_PORT
EP=http://127.0.0.1:$PROXY_PORT

log "generating data"
for t in $(seq 0 9); do
  mkdir -p "$WORK/src/many/table$t"
  head -c $((100 * 1024 * 1024)) /dev/urandom | split -b 100K -a 4 -d - "$WORK/src/many/table$t/part-"
done
mkdir -p "$WORK/src/many/large" "$WORK/src/big"
for i in 1 2 3 4; do head -c $((256 * 1024 * 1024)) /dev/urandom >"$WORK/src/many/large/blob$i.bin"; done
head -c $((2048 * 1024 * 1024)) /dev/urandom >"$WORK/src/big/one.bin"
"$AWS" --endpoint-url "$DIRECT" s3 mb s3://bench >/dev/null
log "uploading"
"$AWS" --endpoint-url "$DIRECT" s3 cp --recursive --only-show-errors "$WORK/src" s3://bench/
rm -rf "$WORK/src"
objects=$("$AWS" --endpoint-url "$DIRECT" s3 ls --recursive s3://bench/many/ | wc -l)
bytes=$("$AWS" --endpoint-url "$DIRECT" s3 ls --recursive --summarize s3://bench/many/ | sed -n 's/.*Total Size: //p')
log "dataset: $objects objects, $bytes bytes"

counts() { curl -s "$EP/__counts"; }
reset() { curl -s -X DELETE "$EP/__counts" >/dev/null; sync; }
# measure NAME CMD...: runs CMD under GNU time; prints "wall_s maxrss_kib counts_json".
measure() {
  reset
  /usr/bin/time -f '%e %M' -o "$WORK/time.out" "$@" >"$WORK/cmd.out" 2>&1 || { cat "$WORK/cmd.out" >&2; return 1; }
  echo "$(cat "$WORK/time.out") $(counts)"
}

declare -A full again
run_tool() { # name full-command...
  local name=$1; shift
  rm -rf "$WORK/dest"; mkdir -p "$WORK/dest"
  log "$name: full sync"
  full[$name]=$(measure "$@")
  log "$name: unchanged re-sync"
  again[$name]=$(measure "$@")
}
run_tool pqcache "$PQCACHE" sync s3://bench/many/ "$WORK/dest" --endpoint "$EP" --path-style --parallel "$PARALLEL" --progress none
run_tool rclone env RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Other RCLONE_CONFIG_B_ENDPOINT="$EP" \
  RCLONE_CONFIG_B_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" RCLONE_CONFIG_B_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
  RCLONE_CONFIG_B_FORCE_PATH_STYLE=true rclone sync b:bench/many "$WORK/dest" --transfers "$PARALLEL" --checkers "$PARALLEL"
run_tool "aws s3 sync" "$AWS" --endpoint-url "$EP" s3 sync --only-show-errors s3://bench/many/ "$WORK/dest"

rm -rf "$WORK/dest"; mkdir -p "$WORK/dest"
log "pqcache: one 2 GiB object"
big=$(measure "$PQCACHE" sync s3://bench/big/ "$WORK/dest" --endpoint "$EP" --path-style --parallel "$PARALLEL" --progress none)
rm -rf "$WORK/dest"

req() { # counts-json kind
  python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], 0))' "$1" "$2"
}
row() { # name full again
  read -r fw fr fc <<<"$2"; read -r aw ar ac <<<"$3"
  printf '| %s | %s s | %d MiB | %s LIST, %s GET | %s s | %s LIST, %s HEAD, %s GET |\n' "$1" "$fw" $((fr / 1024)) \
    "$(req "$fc" LIST)" "$(req "$fc" GET)" "$aw" "$(req "$ac" LIST)" "$(req "$ac" HEAD)" "$(req "$ac" GET)"
}
echo
echo "Dataset: $objects objects, $(( bytes / 1024 / 1024 )) MiB (10,240 × 100 KiB + 4 × 256 MiB), versitygw on 127.0.0.1, parallelism $PARALLEL; the page cache is left as it is (the source files are read from it by the server alike for every tool)."
echo
echo "| tool | full sync | peak RSS | full sync requests | unchanged re-sync | re-sync requests |"
echo "|---|---|---|---|---|---|"
for name in pqcache rclone "aws s3 sync"; do row "$name" "${full[$name]}" "${again[$name]}"; done
read -r bw br _ <<<"$big"
echo
echo "pqcache on one 2 GiB object: $bw s, peak RSS $((br / 1024)) MiB."
