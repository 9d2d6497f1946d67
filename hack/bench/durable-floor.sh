#!/usr/bin/env bash
# durable-floor.sh measures what durability itself costs a client on this machine, beside pqcache, on
# the shapes of many small files where that cost is largest: ROUNDS interleaved rounds of
#   floor            list + parallel GET into files, nothing else (hack/bench/floor)
#   floor+sync       the same, then `sync -f` of its directory: the floor made durable
#   floor-direct     every file written with direct I/O (floor -direct -direct-above 0), then `sync -f`
#   pqcache          pqcache sync (durable, atomic publish, manifest, generations)
#   pqcache-gen0     pqcache sync --generations 0 (no generation trees)
#   stage-ephemeral  pqcache stage --ephemeral (no durability, no generations: what pqcache does
#                    beyond the floor when nothing is made durable)
# and prints, per shape and variant, the median and range of the wall times and the median's speed
# as a share of the floor's. The question it answers: can a durable client reach 90% of the floor's
# speed here at all? (floor+sync and floor-direct are the cheapest durable clients we know.)
#
# Needs Debian's awscli and time, and bc. Traffic stays on 127.0.0.1.
# Usage: ROUNDS=7 SHAPES="small mid" hack/bench/durable-floor.sh [WORKDIR]   (default /tmp/pqcache-durable)
set -euo pipefail
WORK=${1:-/tmp/pqcache-durable}
PARALLEL=${PARALLEL:-8}
S3_PORT=${S3_PORT:-7174}
ROUNDS=${ROUNDS:-7}
SHAPES=${SHAPES:-small mid}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for tool in "$AWS" /usr/bin/time bc; do
  command -v "$tool" >/dev/null || { echo "durable-floor.sh: $tool not found (apt-get install awscli time bc)" >&2; exit 1; }
done
cd "$ROOT"
build_tools
rm -rf "$WORK"
mkdir -p "$WORK/dest"
start_s3 "$WORK/s3"
log "generating and uploading small (3,000 x 64 KiB) and mid (400 x 512 KiB)"
upload_shapes small mid
settle

floor=("$ROOT/bin/floor" -endpoint "$S3" -parallel "$PARALLEL")
pq=(--endpoint "$S3" --path-style --parallel "$PARALLEL" --progress none)
VARIANTS="floor floor+sync floor-direct pqcache pqcache-gen0 stage-ephemeral"

# one VARIANT SHAPE: prints the wall seconds of one run into a new directory (its `sync -f` included
# where the variant is durable by it).
one() {
  local v=$1 shape=$2 dest wall
  dest=$(mktemp -d "$WORK/dest/$v-$shape-XXXXXX")
  sync
  case $v in
  floor | floor+sync) read -r wall _ < <(measure "${floor[@]}" "s3://bench/$shape/" "$dest") ;;
  floor-direct) read -r wall _ < <(measure "${floor[@]}" -direct -direct-above 0 "s3://bench/$shape/" "$dest") ;;
  pqcache) read -r wall _ < <(measure "$ROOT/bin/pqcache" sync "s3://bench/$shape/" "$dest" "${pq[@]}") ;;
  pqcache-gen0) read -r wall _ < <(measure "$ROOT/bin/pqcache" sync "s3://bench/$shape/" "$dest" --generations 0 "${pq[@]}") ;;
  stage-ephemeral) read -r wall _ < <(measure "$ROOT/bin/pqcache" stage "s3://bench/$shape/" "$dest" --prefix "" --ephemeral "${pq[@]}") ;;
  esac
  case $v in
  floor+sync | floor-direct) wall=$(echo "$wall + $(durable "$dest")" | bc -l) ;;
  esac
  printf '%.3f\n' "$wall"
}

declare -A times
for shape in $SHAPES; do
  for r in $(seq "$ROUNDS"); do
    log "$shape: round $r of $ROUNDS"
    for v in $VARIANTS; do
      times[$shape/$v]+="$(one "$v" "$shape") "
    done
  done
done

# median LIST... and min/max, of whitespace-separated numbers.
stats() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.3f %.3f %.3f\n", m, a[1], a[NR]}'; }

echo "Parallelism $PARALLEL, versitygw v1.8.0 on 127.0.0.1, $(nproc) cores, $ROUNDS interleaved rounds, $(date -u +%F), load $(load)."
echo
echo "| shape | variant | median | range | speed, share of the floor's (median) |"
echo "|---|---|---|---|---|"
for shape in $SHAPES; do
  read -r fm _ _ < <(stats "${times[$shape/floor]}")
  for v in $VARIANTS; do
    read -r m lo hi < <(stats "${times[$shape/$v]}")
    printf '| %s | %s | %.2f s | %.2f–%.2f s | %.0f%% |\n' "$shape" "$v" "$m" "$lo" "$hi" "$(echo "100 * $fm / $m" | bc -l)"
  done
done
rm -rf "$WORK/dest"
