#!/usr/bin/env bash
# Run a command in a memory-limited cgroup, as a container with a memory limit runs it: a child of
# this shell's own memory cgroup (cgroup v1, or v2 where the memory controller is delegated), created
# for the run and removed after it. No mount and no host setting changes.
#
#   hack/bench/memcg.sh 128Mi bin/pqcache bench --engine duckdb --data /tmp/sf1 --queries 9,18,21
#
# The limit is a number of MiB with an Mi suffix. After the command it prints the cgroup's peak and
# how often the limit was hit, on stderr.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0"; exit 2; }
limit=${1%Mi}
shift
[[ $limit =~ ^[0-9]+$ ]] || { echo "memcg.sh: the limit must be like 128Mi" >&2; exit 2; }

if v1=$(grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup | cut -d: -f3) && [ -n "$v1" ]; then
	cg=/sys/fs/cgroup/memory${v1%/}/pqcache-memcg-$$
	mkdir "$cg"
	echo $((limit << 20)) >"$cg/memory.limit_in_bytes"
	peak_file=memory.max_usage_in_bytes
	events() { echo "limit hit $(cat "$cg/memory.failcnt") times"; }
else
	cg=/sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3)
	cg=${cg%/}/pqcache-memcg-$$
	mkdir "$cg"
	echo $((limit << 20)) >"$cg/memory.max"
	peak_file=memory.peak
	events() { grep -E '^(max|oom_kill) ' "$cg/memory.events" | tr '\n' ' '; }
fi
cleanup() { rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT

rc=0
(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@") || rc=$?
echo "memcg.sh: ${limit} MiB limit, peak $(($(cat "$cg/$peak_file") >> 20)) MiB, $(events)" >&2
exit $rc
