#!/usr/bin/env bash
# events.sh: freshness by S3 event notifications with the standalone data plane, and what a change
# costs by the event path against the listing path. Everything on 127.0.0.1:
#   1. versitygw posts its bucket notifications to `pqcache watch` (its webhook); `pqcache-testkit lag`
#      writes objects at 1 and 20 per second and times each from the end of its PUT to the moment it
#      is published in the watched directory: p50/p90/p99/max, and the requests per change from
#      watch's own report (target: 0 LIST, 1 GET per changed object);
#   2. the same at 1 per second under a `--fresh` prefix (batches flush 500 ms after a fresh change);
#   3. a prefix of N objects (default 100,000, written into versitygw's posix root by
#      hack/bench/s3gen) synced once; then one object rewritten and applied by a targeted sync
#      (`pqcache sync --changes`), another rewritten and found by a listing sync: time and requests.
# Prints Markdown. Usage: hack/bench/events.sh [WORKDIR]  (default /tmp/pqcache-bench-events)
set -euo pipefail
WORK=${1:-/tmp/pqcache-bench-events}
N=${N:-100000}
SLOW_COUNT=${SLOW_COUNT:-60}
FAST_COUNT=${FAST_COUNT:-600}
S3_PORT=${S3_PORT:-7173}
HOOK_PORT=${HOOK_PORT:-7174}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
build_tools
# The lag probe is a test tool, not in the shipped binary.
go build -o bin/pqcache-testkit ./test/cmd/pqcache-testkit
rm -rf "$WORK"
mkdir -p "$WORK"
S3=http://127.0.0.1:$S3_PORT
TOKEN=bench-events-token-0123456789
common=(--endpoint "$S3" --path-style)

# watch first: versitygw posts a test event when it starts and refuses to start if nobody answers.
bin/pqcache watch s3://events/live/ "$WORK/live" "${common[@]}" --webhook-listen "127.0.0.1:$HOOK_PORT" \
  --webhook-token "$TOKEN" --webhook-query-token --fresh fresh/ --no-initial-sync --resync 0 --log-level info >"$WORK/watch.jsonl" 2>"$WORK/watch.log" &
bench_pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$HOOK_PORT/" && break; sleep 0.1; done
echo '{"s3:ObjectCreated:*": true, "s3:ObjectRemoved:*": true}' >"$WORK/filter.json"
mkdir -p "$WORK/s3"
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  bin/versitygw --port "127.0.0.1:$S3_PORT" --health /health --keep-alive --quiet \
  --event-webhook-url "http://127.0.0.1:$HOOK_PORT/events/local/watch?token=$TOKEN" --event-filter "$WORK/filter.json" \
  posix "$WORK/s3" >"$WORK/versitygw.log" 2>&1 &
bench_pids+=($!)
for _ in $(seq 100); do curl -sf "$S3/health" >/dev/null && break; sleep 0.1; done
echo bucket >"$WORK/seed"
bin/pqcache s3 put "$WORK/seed" s3://events/seed "${common[@]}" >/dev/null
bin/pqcache s3 put "$WORK/seed" s3://big/seed "${common[@]}" >/dev/null

# lag LABEL RATE COUNT SUBPREFIX: one lag run; prints a table row.
lag() {
  local label=$1 rate=$2 count=$3 sub=$4 before after
  before=$(wc -l <"$WORK/watch.jsonl")
  log "lag: $label"
  bin/pqcache-testkit lag "${common[@]}" --bucket events --prefix "live/$sub" --data "$WORK/live/$sub" \
    --rate "$rate" --count "$count" --timeout 2m >"$WORK/lag.json"
  sleep 1
  after=$(wc -l <"$WORK/watch.jsonl")
  python3 - "$label" "$WORK/lag.json" "$WORK/watch.jsonl" "$before" "$after" "$(load)" <<'EOF'
import json, sys
label, lag, watch, before, after, load = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
lines = [json.loads(l) for l in open(watch).read().splitlines()[before:after]]
ev = [l for l in lines if l["trigger"] == "events"]
applied = sum(l["changes"]["applied"] for l in ev)
req = {k: sum(l["requests"].get(k, 0) for l in ev) for k in ("list", "get", "head")}
per = lambda k: req[k] / applied if applied else 0
print("| %s | %d | %d | %d ms | %d ms | %d ms | %d ms | %d | %.2f LIST, %.2f GET, %.2f HEAD | %s |" % (
    label, lag["written"], lag["published"], lag["p50Millis"], lag["p90Millis"], lag["p99Millis"], lag["maxMillis"],
    len(ev), per("list"), per("get"), per("head"), load))
EOF
}

out=$WORK/table.md
{
  echo "versitygw v1.8.0 on 127.0.0.1 posting to \`pqcache watch\` (window 2 s, max delay 10 s, fresh 500 ms), $(date -u +%F)."
  echo
  echo "| writes | objects | published | p50 | p90 | p99 | max | targeted syncs | requests per change | load |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  lag "1 per second" 1 "$SLOW_COUNT" steady/
  lag "20 per second" 20 "$FAST_COUNT" steady/
  lag "1 per second, fresh prefix" 1 "$SLOW_COUNT" fresh/
  echo
} >"$out"

log "writing $N objects into the posix root"
bin/s3gen -root "$WORK/s3" -bucket big -prefix data/ -n "$N" -size 1024 2>&1 | tail -1 >&2
log "full sync of $N objects"
read -r wall _ <<<"$(measure bin/pqcache sync s3://big/data/ "$WORK/big" "${common[@]}" --progress none)"
{
  echo "A prefix of $N objects of 1 KiB (full sync: $wall s), one object rewritten, then:"
  echo
  echo "| path | wall | requests | copied |"
  echo "|---|---|---|---|"
} >>"$out"
# change ONE-KEY LABEL ARGS...: rewrites one object through the S3 API and runs one sync.
change() {
  local key=$1 label=$2; shift 2
  head -c 1024 /dev/urandom >"$WORK/obj"
  bin/pqcache s3 put "$WORK/obj" "s3://big/data/$key" "${common[@]}" >/dev/null
  read -r wall _ <<<"$(measure bin/pqcache sync s3://big/data/ "$WORK/big" "${common[@]}" --progress none --json "$@")"
  python3 - "$label" "$wall" "$WORK/cmd.out" <<'EOF'
import json, sys
label, wall, out = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
rep = json.loads(out[out.index("{"):])
q = rep["requests"]
print("| %s | %s s | %d LIST, %d GET, %d HEAD | %d |" % (label, wall, q.get("list", 0), q.get("get", 0), q.get("head", 0), rep["filesCopied"]))
EOF
}
echo '{"changes":[{"key":"data/d0042/o0042000.bin"}]}' >"$WORK/changes.json"
change d0042/o0042000.bin "event path (\`sync --changes\`: the changed key)" --changes "$WORK/changes.json" >>"$out"
change d0043/o0043000.bin "listing path (\`sync\`)" >>"$out"
cat "$out"
