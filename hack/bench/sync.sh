#!/usr/bin/env bash
# sync.sh compares pqcache sync with the tools users would otherwise run, side by side in one run, on
# the same data served by a local versitygw, at equal parallelism, for three shapes of data reported
# apart:
#   large  8 objects of 128 MiB (uploaded by `aws s3 cp`: multipart, 8 MiB parts)
#   mid    400 objects of 512 KiB
#   small  3,000 objects of 64 KiB
# Tools: pqcache; the "floor" (hack/bench/floor: list + parallel GET into files, nothing else), and
# the floor writing files over 256 KiB with direct I/O as pqcache does (floor-direct);
# rclone at a pinned release built from the Go module proxy (RCLONE_VERSION, with its fast flags for
# S3 to local: --fast-list --use-server-modtime, transfers = checkers = parallelism); Debian's rclone;
# Debian's `aws s3 sync`. For each: the wall time of a full sync, the time a `sync -f` of its
# destination still takes after it exits (the durability it did not pay for; pqcache's is ~0), user+sys
# CPU seconds per GiB, peak RSS, and an unchanged re-sync. Then REPEAT more alternating runs of
# SPREAD_TOOLS (pqcache and the floors) on each shape, to show the spread, and `pqcache stage` durable
# and --ephemeral (STAGE=0 skips it). TOOLS picks tools (pqcache-size: pqcache --verify size, no
# hashing; pqcache-sha256: --verify sha256, SHA-256 of every file besides the store's checksum;
# pqcache-page-cache: --page-cache, no direct I/O); BEFORE=/path/to/an/older/pqcache adds it as tool "before"
# (BEFORE_LABEL names it), for before/after figures from one run. Prints Markdown.
#
# Needs Debian's rclone, awscli and time (apt-get install -y rclone awscli time) and bc. Builds
# rclone at the Makefile's RCLONE_VERSION once into bin/ (`make rclone`, a long build: tens of minutes).
# Usage: hack/bench/sync.sh [WORKDIR]   (default /tmp/pqcache-bench; ~15 GB of disk: runs delete nothing
# until the end, see settle in lib.sh)
set -euo pipefail
WORK=${1:-/tmp/pqcache-bench}
PARALLEL=${PARALLEL:-8}
S3_PORT=${S3_PORT:-7170}
REPEAT=${REPEAT:-2}
SHAPES=${SHAPES:-large mid small}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RCLONE_VERSION=${RCLONE_VERSION:-$(sed -n 's/^RCLONE_VERSION ?= //p' "$ROOT/Makefile")}
for tool in rclone "$AWS" /usr/bin/time bc; do
  command -v "$tool" >/dev/null || { echo "sync.sh: $tool not found (apt-get install rclone awscli time bc)" >&2; exit 1; }
done
mkdir -p "$WORK"
cd "$ROOT"
build_tools
RCLONE_NEW=$ROOT/bin/rclone-$RCLONE_VERSION
case " ${TOOLS:-rclone-new} " in *" rclone-new "*) make -s rclone RCLONE_VERSION="$RCLONE_VERSION" ;; esac
RCLONE_OLD=/usr/bin/rclone

rm -rf "$WORK/s3" "$WORK/dest" "$WORK/src"
mkdir -p "$WORK/dest"
start_s3 "$WORK/s3"
export AWS_CONFIG_FILE=$WORK/aws-config
printf '[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = %s\n' "$PARALLEL" >"$AWS_CONFIG_FILE"
export RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Other RCLONE_CONFIG_B_ENDPOINT=$S3 \
  RCLONE_CONFIG_B_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID RCLONE_CONFIG_B_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY \
  RCLONE_CONFIG_B_FORCE_PATH_STYLE=true RCLONE_CONFIG=/dev/null

log "generating and uploading data"
upload_shapes large mid small
settle

declare -A BYTES COUNT
for shape in $SHAPES; do
  read -r COUNT[$shape] BYTES[$shape] < <(find "$WORK/s3/bench/$shape" -type f -printf '%s\n' | awk '{n++; s+=$1} END {print n, s}')
done

# tool_cmd TOOL SHAPE DEST: the command line of one tool.
tool_cmd() {
  local tool=$1 shape=$2 dest=$3
  case $tool in
  pqcache) echo "$ROOT/bin/pqcache sync s3://bench/$shape/ $dest --endpoint $S3 --path-style --parallel $PARALLEL --progress none" ;;
  pqcache-size) echo "$ROOT/bin/pqcache sync s3://bench/$shape/ $dest --verify size --endpoint $S3 --path-style --parallel $PARALLEL --progress none" ;;
  pqcache-sha256) echo "$ROOT/bin/pqcache sync s3://bench/$shape/ $dest --verify sha256 --endpoint $S3 --path-style --parallel $PARALLEL --progress none" ;;
  pqcache-page-cache) echo "$ROOT/bin/pqcache sync s3://bench/$shape/ $dest --page-cache --endpoint $S3 --path-style --parallel $PARALLEL --progress none" ;;
  before) echo "$BEFORE sync s3://bench/$shape/ $dest --endpoint $S3 --path-style --parallel $PARALLEL --progress none" ;;
  floor) echo "$ROOT/bin/floor -endpoint $S3 -parallel $PARALLEL s3://bench/$shape/ $dest" ;;
  floor-direct) echo "$ROOT/bin/floor -direct -endpoint $S3 -parallel $PARALLEL s3://bench/$shape/ $dest" ;;
  rclone-new) echo "$RCLONE_NEW sync b:bench/$shape $dest --transfers $PARALLEL --checkers $PARALLEL --fast-list --use-server-modtime" ;;
  rclone-old) echo "$RCLONE_OLD sync b:bench/$shape $dest --transfers $PARALLEL --checkers $PARALLEL --fast-list --use-server-modtime" ;;
  aws) echo "$AWS --endpoint-url $S3 s3 sync --only-show-errors s3://bench/$shape/ $dest" ;;
  esac
}
declare -A NAME=([pqcache-size]="pqcache --verify size (no hashing)" [pqcache-sha256]="pqcache --verify sha256" [pqcache-page-cache]="pqcache --page-cache" [floor-direct]="floor, direct I/O over 256 KiB" [before]="pqcache before (${BEFORE_LABEL:-${BEFORE:-}})" [pqcache]="pqcache" [floor]="floor (list + GET)" [rclone-new]="rclone ${RCLONE_VERSION#v}" [rclone-old]="rclone $($RCLONE_OLD version | sed -n '1s/rclone v//p') (Debian)" [aws]="aws s3 sync $($AWS --version | sed 's/aws-cli\/\([^ ]*\).*/\1/') (Debian)")

# run TOOL SHAPE: one full sync into a new directory, its sync -f, and an unchanged re-sync.
# Prints "wall user sys rss_kib durable_s resync_s load".
run() {
  local dest; dest=$(mktemp -d "$WORK/dest/$1-$2-XXXXXX") # run is called in $(...): no counter survives
  sync
  local l; l=$(load)
  local full dur again
  # shellcheck disable=SC2046
  full=$(measure $(tool_cmd "$1" "$2" "$dest"))
  dur=$(durable "$dest")
  # shellcheck disable=SC2046
  again=$(measure $(tool_cmd "$1" "$2" "$dest"))
  local n; n=$(find "$dest" -path "$dest/.pqcache" -prune -o -type f -print | wc -l)
  [ "$n" = "${COUNT[$2]}" ] || { echo "$1 left $n files of ${COUNT[$2]} in $dest" >&2; return 1; }
  echo "$full $dur $(cut -d' ' -f1 <<<"$again") ${l// /\/}"
}

row() { # TOOL SHAPE RESULT
  read -r wall user sys rss dur again l <<<"$3"
  local gib; gib=$(echo "${BYTES[$2]} / 1073741824" | bc -l)
  printf '| %s | %s | %.2f s | %.2f s | **%.2f s** | %.1f | %d MiB | %.2f s | %s |\n' "$2" "${NAME[$1]}" "$wall" "$dur" \
    "$(echo "$wall + $dur" | bc -l)" "$(echo "($user + $sys) / $gib" | bc -l)" $((rss / 1024)) "$again" "$l"
}

TOOLS=${TOOLS:-floor floor-direct pqcache rclone-new rclone-old aws}
SPREAD_TOOLS=${SPREAD_TOOLS:-floor floor-direct pqcache}
out=$WORK/table.md
{
  echo "Parallelism $PARALLEL, versitygw v1.8.0 on 127.0.0.1, $(nproc) cores, $(date -u +%F)."
  echo
  echo "| shape | tool | full sync | then \`sync -f\` | durable total | CPU s/GiB | peak RSS | unchanged re-sync | load (1/5/15 min) |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$out"
for shape in $SHAPES; do
  log "$shape: ${COUNT[$shape]} objects, ${BYTES[$shape]} bytes"
  for tool in $TOOLS; do
    log "$shape: $tool"
    row "$tool" "$shape" "$(run "$tool" "$shape")" >>"$out"
  done
done
if [ "$REPEAT" -gt 0 ]; then
  {
    echo
    echo "Spread: $REPEAT more alternating runs of $SPREAD_TOOLS."
    echo
    echo "| shape | tool | full sync | then \`sync -f\` | durable total | CPU s/GiB | peak RSS | unchanged re-sync | load (1/5/15 min) |"
    echo "|---|---|---|---|---|---|---|---|---|"
  } >>"$out"
  for shape in $SHAPES; do
    for _ in $(seq "$REPEAT"); do
      for tool in $SPREAD_TOOLS; do
        log "spread $shape: $tool"
        row "$tool" "$shape" "$(run "$tool" "$shape")" >>"$out"
      done
    done
  done
fi
# pqcache stage into a scratch directory (a BenchRun's mixed-staged step), durable and --ephemeral.
[ "${STAGE:-1}" = 1 ] && {
  echo
  echo "\`pqcache stage\` of the whole shape into a new directory, durable and with \`--ephemeral\` (no syncfs, no fsync), alternating:"
  echo
  echo "| shape | durable | --ephemeral | load (1/5/15 min) |"
  echo "|---|---|---|---|"
} >>"$out"
for shape in $SHAPES; do
  [ "${STAGE:-1}" = 1 ] || break
  for _ in 1 2; do
    declare -A st=()
    for mode in durable ephemeral; do
      dest=$(mktemp -d "$WORK/dest/stage-$shape-XXXXXX"); sync
      flag=(); [ $mode = ephemeral ] && flag=(--ephemeral)
      read -r st[$mode] _ <<<"$(measure "$ROOT/bin/pqcache" stage "s3://bench/$shape/" "$dest" --prefix "" "${flag[@]}" --endpoint "$S3" --path-style --parallel "$PARALLEL" --progress none)"
    done
    printf '| %s | %s s | %s s | %s |\n' "$shape" "${st[durable]}" "${st[ephemeral]}" "$(load)" >>"$out"
  done
done
rm -rf "$WORK/dest"
cat "$out"
