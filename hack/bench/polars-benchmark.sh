#!/usr/bin/env bash
# Polars' query times in `pqcache bench` beside polars-benchmark's own runner (the PDS-H runner the
# field quotes), on the same Parquet files, the same Polars and the same threads, run back to back:
# issue 37 asks for their geometric means within 10% of each other. Prints per query the best of
# ROUNDS on each side, the geometric means and their ratio, as one Markdown table.
#
#   POLARS_BENCHMARK_DIR=/tmp/polars-benchmark DATA=/tmp/sf1 SCALE=1 hack/bench/polars-benchmark.sh
#
# polars-benchmark is public: github.com/pola-rs/polars-benchmark, measured at commit 6e3fefc
# ("Add option for running polars-gpu engine (#137)"):
#   git clone https://github.com/pola-rs/polars-benchmark /tmp/polars-benchmark
#   git -C /tmp/polars-benchmark checkout 6e3fefc
# DATA is a flat TPC-H directory (`bin/pqcache datagen --scale SCALE --out DATA`: <table>.parquet), the
# layout upstream reads (<dataset_base_dir>/<table>.parquet, dataset_base_dir data/tables/scale-<SF>):
# a copy of the checkout under WORK gets symlinks to DATA's files there, so both read the same files.
#
# Upstream at 6e3fefc calls collect(streaming=..., no_optimization=...), arguments Polars 2 removed;
# the copy is patched to collect(engine=...) only, with the engine it already passes ("cpu", Polars'
# in-memory engine, as pqcache's default). Nothing else of the runner changes: its timer is linetimer's
# CodeTimer around collect(), after an unmeasured collect() of a one-row file (_preload_engine).
#
# Each round runs every query once on each side, in turn (which side goes first alternates by round),
# so that a loaded machine slows both alike: upstream as `python -m queries.polars.qN` (one process,
# as its own `make run-polars` does) with RUN_LOG_TIMINGS=1 RUN_IO_TYPE=parquet SCALE_FACTOR=SCALE,
# pqcache as `bench --engine polars --isolation process --iterations 1 --warmups 0`. Both get
# POLARS_MAX_THREADS=THREADS.
#
# FORMS=upstream runs upstream's own Polars forms in pqcache too (a workload file that
# hack/bench/polars-benchmark-workload.py writes from the checkout's queries/polars/qN.py): the same
# LazyFrames under both timers, so what differs is the runners. The default, FORMS=pqcache, runs
# pqcache's forms (bench/queries/polars), which keep exact decimals where upstream's turn to floats
# (docs/benchmarks.md lists the differences).
#
# Environment: POLARS_BENCHMARK_DIR and DATA (required), SCALE (the scale factor, default 1), ROUNDS
# (2), THREADS (2), FORMS (pqcache or upstream), QUERIES (1-22, a list such as 1,9,18 or a range), PQCACHE (bin/pqcache, built if
# absent), PQCACHE_POLARS_PYTHON (pqcache's Polars, default the checkout's bin/polars-venv: make
# polars-env), PB_VENV (upstream's venv, default bin/polars-benchmark-venv, made from
# hack/bench/polars-benchmark-requirements.txt), PYTHON (CPython 3.11+ for that venv), WORK (scratch,
# default a temporary directory; upstream's timings.csv and pqcache's JSON stay there).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${POLARS_BENCHMARK_DIR:?set POLARS_BENCHMARK_DIR to a polars-benchmark checkout (see the header)}"
: "${DATA:?set DATA to a flat TPC-H directory (pqcache datagen)}"
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
FORMS=${FORMS:-pqcache}
PQ=${PQCACHE:-$ROOT/bin/pqcache}
PB_VENV=${PB_VENV:-$ROOT/bin/polars-benchmark-venv}
LOCK=$ROOT/hack/bench/polars-benchmark-requirements.txt
WORK=${WORK:-$(mktemp -d)}
DATA=$(cd "$DATA" && pwd)
TABLES=(customer lineitem nation orders part partsupp region supplier)

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# pb_venv makes upstream's venv from the hashed lock file, unless it already holds that file's copy.
pb_venv() {
	if cmp -s "$LOCK" "$PB_VENV/requirements.txt" && "$PB_VENV/bin/python" -c 'import polars, pydantic_settings, linetimer' 2>/dev/null; then
		return 0
	fi
	log "creating $PB_VENV"
	rm -rf "$PB_VENV"
	"${PYTHON:-python3}" -m venv "$PB_VENV"
	"$PB_VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
		--require-hashes --no-deps --only-binary :all: -r "$LOCK"
	cp "$LOCK" "$PB_VENV/requirements.txt"
}

# pb_tree copies the checkout (without its data and output) to WORK/pb, patches collect() for
# Polars 2 and links DATA's tables where upstream's settings look for them.
pb_tree() {
	local sf_dir t
	rm -rf "$WORK/pb" && mkdir -p "$WORK/pb"
	tar -C "$POLARS_BENCHMARK_DIR" --exclude=./data --exclude=./output --exclude=./.git -c . | tar -x -C "$WORK/pb"
	sed -i 's/lf\.collect, streaming=streaming, no_optimization=eager, engine=engine/lf.collect, engine=engine/' \
		"$WORK/pb/queries/polars/utils.py"
	! grep -q 'no_optimization' "$WORK/pb/queries/polars/utils.py" &&
		grep -q 'lf\.collect, engine=engine$' "$WORK/pb/queries/polars/utils.py" || {
		echo "polars-benchmark: queries/polars/utils.py is not 6e3fefc's; patch its collect() call by hand" >&2
		return 1
	}
	# Upstream's directory name is Python's str() of the float: scale-1.0, scale-0.1.
	sf_dir=$WORK/pb/data/tables/scale-$("$PB_VENV/bin/python" -c "print(float('$SCALE'))")
	mkdir -p "$sf_dir"
	for t in "${TABLES[@]}"; do
		[ -f "$DATA/$t.parquet" ] || { echo "$DATA/$t.parquet is missing: want pqcache datagen's flat layout" >&2; return 1; }
		ln -s "$DATA/$t.parquet" "$sf_dir/$t.parquet"
	done
}

# pb_query N: one query in upstream's runner; its time goes to WORK/pb-out/timings.csv.
pb_query() {
	(cd "$WORK/pb" && POLARS_MAX_THREADS=$THREADS RUN_LOG_TIMINGS=1 RUN_IO_TYPE=parquet SCALE_FACTOR=$SCALE \
		PATH_TIMINGS="$WORK/pb-out" "$PB_VENV/bin/python" -m "queries.polars.q$1") >"$WORK/pb-q$1.log" 2>&1
	# Upstream prints "qN FAILED" and exits 0 when a query raises.
	if grep -q "FAILED" "$WORK/pb-q$1.log"; then
		echo "polars-benchmark q$1 failed:" >&2; tail -5 "$WORK/pb-q$1.log" >&2; return 1
	fi
}

# pq_query N ROUND: one query in pqcache bench, its JSON in WORK/pq/rROUND-qN.json.
pq_query() {
	local workload=(--queries "$1")
	[ "$FORMS" = pqcache ] || workload=(--workload "$WORK/upstream-forms.json" --queries "q$1")
	"$PQ" bench --engine polars --data "$DATA" --isolation process "${workload[@]}" --iterations 1 --warmups 0 \
		--threads "$THREADS" --scale-factor "$SCALE" --json "$WORK/pq/r$2-q$1.json" >/dev/null 2>"$WORK/pq/r$2-q$1.log" || {
		echo "pqcache bench q$1 failed:" >&2; tail -5 "$WORK/pq/r$2-q$1.log" >&2; return 1
	}
}

queries=()
IFS=, read -ra parts <<<"${QUERIES:-1-22}"
for p in "${parts[@]}"; do
	if [[ $p == *-* ]]; then queries+=($(seq "${p%-*}" "${p#*-}")); else queries+=("$p"); fi
done

[ -x "$PQ" ] || (cd "$ROOT" && go build -o "$PQ" ./cmd/pqcache)
export PQCACHE_POLARS_PYTHON=${PQCACHE_POLARS_PYTHON:-$ROOT/bin/polars-venv/bin/python}
[ -x "$PQCACHE_POLARS_PYTHON" ] || (cd "$ROOT" && make -s polars-env)
pb_venv
pb_tree
case $FORMS in
pqcache) ;;
upstream) "$PB_VENV/bin/python" "$ROOT/hack/bench/polars-benchmark-workload.py" "$WORK/pb" "$WORK/upstream-forms.json" ;;
*) echo "FORMS=$FORMS: want pqcache or upstream" >&2; exit 2 ;;
esac
rm -rf "$WORK/pq" && mkdir -p "$WORK/pq" "$WORK/pb-out"
rm -f "$WORK/pb-out/timings.csv"
log "forms: $FORMS; polars: pqcache $("$PQCACHE_POLARS_PYTHON" -c 'import polars; print(polars.__version__)'), polars-benchmark $("$PB_VENV/bin/python" -c 'import polars; print(polars.__version__)')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	for q in "${queries[@]}"; do
		if ((r % 2)); then pb_query "$q" && pq_query "$q" "$r"; else pq_query "$q" "$r" && pb_query "$q"; fi
		log "round $r q$q done"
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "upstream's timings.csv and pqcache's JSON in $WORK" >&2
# Exits 1 when the geometric means are more than 10% apart.
"$PB_VENV/bin/python" "$ROOT/hack/bench/polars-benchmark-compare.py" "$WORK/pb-out/timings.csv" "$WORK/pq"
