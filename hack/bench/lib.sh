# lib.sh: what the sync benchmarks share (sourced, not run): a versitygw on 127.0.0.1 over a posix root,
# credentials for every client, and a measuring wrapper around GNU time. Traffic stays on 127.0.0.1.
# Callers set WORK (scratch directory) and S3_PORT before sourcing, and may set ROOT_EXTRA_ARGS.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
AWS=${AWS:-/usr/bin/aws} # Debian's awscli v2, not a pip shim earlier in PATH
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_CA_BUNDLE AWS_PROFILE

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

bench_pids=()
bench_cleanup() { for p in "${bench_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap bench_cleanup EXIT

# build_tools builds bin/pqcache (the binary a sync Job runs, DuckDB linked), the static
# bin/pqcache-runner, the benchmark tools (floor, countproxy, s3gen, rss) and versitygw.
build_tools() {
  (cd "$ROOT" && make -s versitygw >&2 &&
    go build -o bin/pqcache ./cmd/pqcache &&
    CGO_ENABLED=0 go build -o bin/pqcache-runner ./cmd/pqcache &&
    for t in floor countproxy s3gen rss; do go build -o "bin/$t" "./hack/bench/$t" || return 1; done)
}

# start_s3 DIR [versitygw posix options...]: serves DIR on 127.0.0.1:$S3_PORT; sets S3 (the endpoint).
# versitygw closes every connection after one response and logs every request unless told otherwise;
# S3 keeps connections alive, so the benchmarks run it with --keep-alive (and --quiet). Without it
# every GET of every tool pays a TCP connect, and the client's CPU goes to dialling.
start_s3() {
  local dir=$1; shift
  mkdir -p "$dir"
  ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
    "$ROOT/bin/versitygw" --port "127.0.0.1:$S3_PORT" --health /health --keep-alive --quiet posix "$@" "$dir" >"$WORK/versitygw.log" 2>&1 &
  bench_pids+=($!)
  S3=http://127.0.0.1:$S3_PORT
  for _ in $(seq 100); do curl -sf "$S3/health" >/dev/null && return 0; sleep 0.1; done
  echo "versitygw did not start; see $WORK/versitygw.log" >&2
  return 1
}

# measure CMD...: runs CMD under GNU time and prints "wall_s user_s sys_s maxrss_kib".
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time.out" "$@" >"$WORK/cmd.out" 2>&1 || {
    echo "command failed: $*" >&2; tail -20 "$WORK/cmd.out" >&2; return 1
  }
  cat "$WORK/time.out"
}

# durable DIR: seconds `sync -f DIR` takes, i.e. what making the tool's output durable still costs.
durable() {
  local t0 t1
  t0=$(date +%s.%N); sync -f "$1"; t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l | xargs printf '%.2f'
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

# upload_shapes SHAPE...: creates bucket "bench" in the server started by start_s3 and uploads the
# named shapes of random data with `aws s3 cp` (the 128 MiB objects as multipart uploads, 8 MiB parts):
#   large  8 objects of 128 MiB
#   mid    400 objects of 512 KiB
#   small  3,000 objects of 64 KiB in three directories
upload_shapes() {
  local shape i t
  for shape in "$@"; do
    mkdir -p "$WORK/src/$shape"
    case $shape in
    large) for i in $(seq 1 8); do head -c $((128 << 20)) /dev/urandom >"$WORK/src/large/part-$i.bin"; done ;;
    mid) head -c $((400 * 512 << 10)) /dev/urandom | split -b 512K -a 3 -d - "$WORK/src/mid/part-" ;;
    small)
      for t in 0 1 2; do
        mkdir -p "$WORK/src/small/t$t"
        head -c $((1000 * 64 << 10)) /dev/urandom | split -b 64K -a 3 -d - "$WORK/src/small/t$t/part-"
      done
      ;;
    esac
  done
  "$AWS" --endpoint-url "$S3" s3 mb s3://bench >/dev/null
  "$AWS" --endpoint-url "$S3" s3 cp --recursive --only-show-errors "$WORK/src" s3://bench/
  rm -rf "$WORK/src"
}

# settle: flushes everything and waits out ext4's "recently deleted" window. This machine's root
# filesystem has no journal, and there ext4 refuses to reuse an inode freed in the last 60 s (360 s
# while its inode table block is dirty): every file created soon after an `rm -rf` of thousands of
# files scans past those inodes, which made file creation ~700 µs of CPU (perf: recently_deleted in
# __ext4_new_inode) and hit every tool alike. So benchmarks delete nothing between runs: each run
# writes a fresh directory, and old ones go before a settle.
settle() { sync; log "waiting 65 s for freed inodes to become reusable"; sleep 65; }
