"""What a Spark application's executors used, for run.py to report on Kubernetes (wire.SparkResult).

The runner measures the driver (its own cgroup); the executors live in pods of their own, so the
driver asks them: a probe job with a task on every executor reads that executor's container cgroup
peak, and Spark's status store gives each executor's life and input bytes. run.py calls usage() before
spark.stop() in each application and writes timing_line() of it; the runner (Go: bench/sparkusage.go)
sums the applications' lines.
"""

import time

CGROUP_PEAKS = ("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes")


def _peak_probe(paths):
    """The task that answers for an executor: its pod (an executor's hostname is its pod name) and its
    container cgroup's peak. Made inside a function so that cloudpickle sends it by value: the
    executors' Python workers cannot import this module."""

    def probe(_):
        import socket

        for path in paths:
            try:
                with open(path) as f:
                    yield socket.gethostname(), int(f.read().strip())
                return
            except (OSError, ValueError):
                continue
        yield socket.gethostname(), 0

    return probe


def executor_peaks(spark, executors, rounds=5):
    """Each executor's peak memory in bytes, by pod name: tasks enough that every executor runs one
    (Spark places them where slots are free), a few rounds until each executor has answered."""
    sc = spark.sparkContext
    probe = _peak_probe(CGROUP_PEAKS)
    peaks = {}
    for _ in range(rounds):
        n = max(executors, 1) * 8
        for pod, peak in sc.parallelize(range(n), n).mapPartitions(probe).collect():
            peaks[pod] = max(peaks.get(pod, 0), peak)
        if len(peaks) >= executors:
            break
    return peaks


def _executors(spark):
    """Spark's executor summaries, dead ones included, without the driver's."""
    store = spark.sparkContext._jsc.sc().statusStore()
    seq = store.executorList(False)  # activeOnly=False
    out = []
    for i in range(seq.size()):
        e = seq.apply(i)
        if e.id() != "driver":
            out.append(e)
    return out


def usage(spark, executors, reads_s3):
    """One application's executors: their peaks, their lives in milliseconds summed, and what they
    read from the bucket: their tasks' input bytes when any table file is s3a:// (a lower bound:
    Parquet's vectored reads bypass the counters; on a mixed input the local files count too), else 0."""
    summaries = _executors(spark)
    now_ms = int(time.time() * 1000)
    lives, input_bytes = 0, 0
    for e in summaries:
        added = e.addTime().getTime()
        removed = e.removeTime()
        end = removed.get().getTime() if removed.isDefined() else now_ms
        lives += max(end - added, 0)
        input_bytes += e.totalInputBytes()
    peaks = executor_peaks(spark, executors)
    return {"executors": executors, "executorPeakBytes": [peaks[k] for k in sorted(peaks)],
            "s3ReadBytes": input_bytes if reads_s3 else 0, "executorMillis": lives}


def timing_line(u):
    """The usage as a line of the timing protocol (docs/bench.md), which the runner sums over the
    iterations' applications into the result's spark block."""
    peaks = ",".join(str(int(p)) for p in u["executorPeakBytes"]) or "0"
    return (f"spark_executors={int(u['executors'])} spark_executor_peak_bytes={peaks} "
            f"spark_s3_read_bytes={int(u['s3ReadBytes'])} spark_executor_ms={int(u['executorMillis'])}")
