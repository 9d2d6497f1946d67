#!/usr/bin/env bash
# Compare pqcache bench runs query by query, interleaved: for each query, every run in turn, so that a
# noisy machine (2 shared cores) slows all of them alike instead of whichever ran last. Prints one
# Markdown table: per query and run, the median and the peak total / anonymous / file-backed memory,
# and whether the digests of all runs agree.
#
#   hack/bench/compare.sh 'duckdb=--engine duckdb --data /tmp/sf1' 'polars=--engine polars --data /tmp/sf1'
#
# Each argument is LABEL=BENCH-ARGS (split on spaces), or LABEL@BINARY=BENCH-ARGS to run that run with
# another pqcache binary (an older build, say). Environment: PQCACHE (default bin/pqcache),
# QUERIES (default 1-22, a list such as 1,9,18 or a range), ITERATIONS (3), WARMUPS (1), THREADS (2),
# OUT (a directory for the per-query JSON, default a temporary one).
set -euo pipefail

PQ=${PQCACHE:-bin/pqcache}
ITERATIONS=${ITERATIONS:-3}
WARMUPS=${WARMUPS:-1}
THREADS=${THREADS:-2}
OUT=${OUT:-$(mktemp -d)}
[ $# -gt 0 ] || { sed -n '2,12p' "$0"; exit 2; }

queries=()
IFS=, read -ra parts <<<"${QUERIES:-1-22}"
for p in "${parts[@]}"; do
	if [[ $p == *-* ]]; then queries+=($(seq "${p%-*}" "${p#*-}")); else queries+=("$p"); fi
done

labels=()
for run in "$@"; do label=${run%%=*}; labels+=("${label%%@*}"); done

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for q in "${queries[@]}"; do
	for run in "$@"; do
		label=${run%%=*} pq=$PQ
		if [[ $label == *@* ]]; then pq=${label#*@} label=${label%%@*}; fi
		# shellcheck disable=SC2086 # the run's arguments are split on spaces on purpose
		"$pq" bench ${run#*=} --queries "$q" --iterations "$ITERATIONS" --warmups "$WARMUPS" --threads "$THREADS" \
			--label "$label" --json "$OUT/$label-$q.json" >/dev/null 2>"$OUT/$label-$q.log"
		jq -r --arg l "$label" '.queries[0] | "\(.name) \($l): \(.status) \(.medianMillis // 0) ms"' "$OUT/$label-$q.json" >&2
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

header="| query |"
rule="|---|"
for l in "${labels[@]}"; do header+=" $l median | $l peak / anon / file MiB |"; rule+="---|---|"; done
echo "$header digests |"
echo "$rule---|"
for q in "${queries[@]}"; do
	row="| $q |"
	digests=()
	for l in "${labels[@]}"; do
		row+=$(jq -r '.queries[0] | if .status == "Succeeded" then
			" \(.medianMillis) ms | \((.peakMemoryBytes // 0) / 1048576 | floor) / \((.peakAnonBytes // 0) / 1048576 | floor) / \((.peakFileBytes // 0) / 1048576 | floor) |"
			else " \(.status) | – |" end' "$OUT/$l-$q.json")
		digests+=("$(jq -r '.queries[0].digest // ""' "$OUT/$l-$q.json")")
	done
	verdict=equal
	for d in "${digests[@]}"; do [ -n "$d" ] && [ "$d" = "${digests[0]}" ] || verdict=differ; done
	echo "$row $verdict |"
done
row="| geometric mean |"
for l in "${labels[@]}"; do
	row+=$(cat "$OUT/$l"-[0-9]*.json | jq -s -r '[.[].queries[0] | select(.status == "Succeeded") | .medianMillis | if . < 1 then 1 else . end | log]
		| " \((add / length) | exp | round) ms | |"')
done
echo "$row |"
echo "per-query JSON and stderr in $OUT" >&2
