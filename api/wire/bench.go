/*
Copyright 2026 The pqcache Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Query outcomes; they match the BenchRun API's QueryStatus.
const (
	StatusSucceeded = "Succeeded"
	StatusFailed    = "Failed"
	StatusTimeout   = "Timeout"
	StatusOOMKilled = "OOMKilled"
)

// What a query's Millis measure (QueryResult.Timing).
const (
	// TimingEngine: the engine's own query time, reported through the timing file.
	TimingEngine = "engine"
	// TimingWall: the whole process's wall time; the engine reported no query time.
	TimingWall = "wall"
)

// Isolations: how queries share engine processes.
const (
	// IsolationProcess runs each query in a fresh process per iteration (polars-benchmark's way).
	IsolationProcess = "process"
	// IsolationSession runs every query of an iteration in one process, in turn, warm.
	IsolationSession = "session"
)

// EnvTimingFile names the file an engine process reports its timings to (docs/bench.md, "Timing
// protocol"): lines of space-separated key=value pairs, "ready_unix_ns=N [rss_bytes=N]" once the
// engine is loaded and "[query=NAME] query_ms=F" after each query's last result row.
const EnvTimingFile = "PQCACHE_TIMING_FILE"

// QueryDelimiter is the line a session engine writes to stdout after each query's rows, so that
// the runner can tell one query's rows from the next one's. Not a canonical row: it starts with
// the ASCII record separator.
const QueryDelimiter = "\x1epqcache:end-of-query"

// WholeRun is the name of the one result a run has when its runner did not finish: it stands for every
// query, with the reason (NotRun, OOMKilled, Timeout) as its status.
const WholeRun = "*"

// QueryResult summarises one query's measured iterations. Times are milliseconds, memory bytes.
type QueryResult struct {
	// Name is the query's name in its workload (q1 to q22 for TPC-H), or WholeRun.
	Name   string `json:"name"`
	Status string `json:"status"`
	// Millis are the measured iterations' query times, in order: the engine's own time from the call
	// that runs the query to its last result row when it reports one (Timing "engine"), else the
	// whole process's wall time (Timing "wall"). MedianMillis, MinMillis and MaxMillis are over them.
	Millis []int64 `json:"millis,omitempty"`
	QueryMeasurements
	// Timing says what Millis measure: TimingEngine or TimingWall (also when only some iterations
	// were reported by the engine: then they are not comparable, and the wall time is kept for all).
	Timing string `json:"timing,omitempty"`
	// StartupMillis are the measured iterations' start-up times, process start to the engine's ready
	// signal (interpreter, import, connection, workload read), when the engine reports it; in session
	// isolation they are the session's (BenchResult.SessionStartupMillis) and absent here.
	StartupMillis []int64 `json:"startupMillis,omitempty"`
	// WallMillis are the measured iterations' whole-process wall times (start to exit, the rows'
	// output included): what Millis were before engines reported their own time. In session
	// isolation, the time from the previous query's last row (or the process start) to this one's.
	WallMillis []int64 `json:"wallMillis,omitempty"`
	// MedianStartupMillis is the median of StartupMillis, and MedianWallMillis of WallMillis (the
	// compact summary keeps them, not the lists). A BenchRun's status keeps neither per query: with
	// the spread and the other figures, one more per query takes its largest status (64 Jobs × 32
	// queries) past 1 MiB; it keeps each result's startupMillis and wallGeometricMeanMillis.
	MedianStartupMillis int64 `json:"medianStartupMillis,omitempty"`
	MedianWallMillis    int64 `json:"medianWallMillis,omitempty"`
	// PeakAboveReadyBytes is the largest peak of an iteration above the engine's resident memory at
	// its ready signal (the loaded interpreter, library and connection subtracted), when the engine
	// reported it; PeakMemoryBytes is the whole process's (above the first sample, right after
	// start). In session isolation both are the session process's over every query it ran.
	PeakAboveReadyBytes int64 `json:"peakAboveReadyBytes,omitempty"`
	// MemorySource says where PeakMemoryBytes came from: "sampled" (/proc every interval), or
	// "rusage" when the kernel's max RSS of the process was higher, i.e. the sampler missed a short peak.
	MemorySource string `json:"memorySource,omitempty"`
	// ExitCode and StderrTail describe a failed run.
	ExitCode   int    `json:"exitCode,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
}

// QueryMeasurements are the figures of one query that a BenchRun's status shows as they are (its
// QueryResult embeds this type): a new figure is one field here. The comments are the API's
// documentation, and the markers its validation.
type QueryMeasurements struct {
	// medianMillis, minMillis and maxMillis are over the measured iterations.
	// +optional
	MedianMillis int64 `json:"medianMillis,omitempty"`
	// +optional
	MinMillis int64 `json:"minMillis,omitempty"`
	// +optional
	MaxMillis int64 `json:"maxMillis,omitempty"`
	// spreadPermille is how much the measured iterations' times vary: their median absolute deviation
	// from the median, in thousandths of the median (25 is 2.5%). Absent with fewer than two
	// iterations, where the spread is unknown, not zero.
	// +optional
	SpreadPermille *int64 `json:"spreadPermille,omitempty"`
	// peakMemoryBytes is the largest peak memory of an iteration, above the process's baseline right
	// after start.
	// +optional
	PeakMemoryBytes int64 `json:"peakMemoryBytes,omitempty"`
	// peakAnonBytes is the anonymous (heap) part of the peak.
	// +optional
	PeakAnonBytes int64 `json:"peakAnonBytes,omitempty"`
	// peakFileBytes is the file-backed (mmap, page cache) part of the peak.
	// +optional
	PeakFileBytes int64 `json:"peakFileBytes,omitempty"`
	// networkReadBytes is what one iteration of the query received over the network (the largest of
	// the measured iterations): what it read from S3, when its input reads S3. Zero when not measured.
	// +optional
	NetworkReadBytes int64 `json:"networkReadBytes,omitempty"`
	// rows is the number of rows the query returned.
	// +optional
	Rows int64 `json:"rows,omitempty"`
	// digest is an order-insensitive hash of the returned rows; equal digests mean equal answers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest,omitempty"`

	// The latency distribution (streams): percentiles of the query time over every measured
	// execution of the query, in every stream.

	// p50Millis, p95Millis and p99Millis are the 50th, 95th and 99th percentiles of the measured
	// executions' query times, by the nearest-rank method (the smallest time that at least that share
	// of executions do not exceed): with few executions p95 and p99 are the slowest one. A BenchRun's
	// status has them for runs with several streams only.
	// +optional
	P50Millis int64 `json:"p50Millis,omitempty"`
	// +optional
	P95Millis int64 `json:"p95Millis,omitempty"`
	// +optional
	P99Millis int64 `json:"p99Millis,omitempty"`
}

// ProbeResult is the sequential read throughput of an input path, measured without a query engine.
type ProbeResult struct {
	Files          int64 `json:"files"`
	Bytes          int64 `json:"bytes"`
	Streams        int   `json:"streams"`
	Millis         int64 `json:"millis"`
	BytesPerSecond int64 `json:"bytesPerSecond"`
}

// BenchResult is a whole bench run: `pqcache bench --json` prints it, and a BenchRun's Job writes it
// (EncodeBenchSummary) as its termination message.
type BenchResult struct {
	// Label names the run in reports, e.g. "2cpu-4gi / volume"; empty uses the engine and data.
	Label  string `json:"label,omitempty"`
	Engine string `json:"engine"`
	Data   string `json:"data"`
	// Config and Input name the resource configuration and the input path (volume, s3, ...) the run
	// measured, when known; reports compare engines within one configuration × input.
	Config              string        `json:"config,omitempty"`
	Input               string        `json:"input,omitempty"`
	Start               time.Time     `json:"start"`
	WallMillis          int64         `json:"wallMillis"`
	Iterations          int           `json:"iterations"`
	Warmups             int           `json:"warmups"`
	Queries             []QueryResult `json:"queries"`
	GeometricMeanMillis int64         `json:"geometricMeanMillis,omitempty"`
	// WallGeometricMeanMillis is the geometric mean of the queries' median whole-process wall
	// times (MedianWallMillis): the figure GeometricMeanMillis was before in-engine timing.
	WallGeometricMeanMillis int64 `json:"wallGeometricMeanMillis,omitempty"`
	// Isolation is IsolationProcess (one process per query per iteration; absent in results made
	// before sessions existed) or IsolationSession (one process per iteration runs every query in
	// turn; memory peaks are then the session's, not separable per query).
	Isolation string `json:"isolation,omitempty"`
	// SessionStartupMillis are, in session isolation, each measured iteration's start-up time.
	SessionStartupMillis []int64 `json:"sessionStartupMillis,omitempty"`
	// StartupMillis is the run's typical start-up: the median of SessionStartupMillis in session
	// isolation, else of the queries' MedianStartupMillis; 0 when the engine reported none. A
	// BenchRun's status keeps this one figure per result.
	StartupMillis int64    `json:"startupMillis,omitempty"`
	FailedQueries []string `json:"failedQueries,omitempty"`
	// Unfinished are, in a summary written while the run goes on (after each query, so that a
	// runner killed between queries leaves what it measured), the queries still to run; empty once
	// the run is done.
	Unfinished []string `json:"unfinished,omitempty"`
	// Workload names the workload the queries came from.
	Workload string `json:"workload,omitempty"`
	// Error says why no query ran; the queries are then absent. ErrorReason classifies it:
	// MissingTables (a table the data has no files for) or InvalidWorkload.
	Error       string `json:"error,omitempty"`
	ErrorReason string `json:"errorReason,omitempty"`
	// Probe is the input path's read throughput, measured when asked for.
	Probe *ProbeResult `json:"probe,omitempty"`
	// NetworkReadBytes is what the network namespace received while the queries ran (warm-ups and
	// every iteration, not the probe): the run's transfer from S3, when it reads S3.
	NetworkReadBytes int64 `json:"networkReadBytes,omitempty"`
	// CgroupPeakBytes is the peak of the runner's own cgroup over the whole run (in a container: the
	// runner and all queries, page cache included), and CgroupPeakSource where it was read; absent
	// when the runner has no cgroup of its own.
	CgroupPeakBytes  int64  `json:"cgroupPeakBytes,omitempty"`
	CgroupPeakSource string `json:"cgroupPeakSource,omitempty"`
	// CostMicros is what the run cost, in millionths of the pricing currency, when a BenchRun priced
	// it (reports read it from the BenchRun's status; the runner does not price).
	CostMicros *int64 `json:"costMicros,omitempty"`
	// Currency is the ISO 4217 code of CostMicros.
	Currency string `json:"currency,omitempty"`
	// BreakEvenRuns is, on a volume run whose engine and configuration also ran on s3 at a higher
	// cost, the number of runs after which filling the cache has paid for itself.
	BreakEvenRuns *int64 `json:"breakEvenRuns,omitempty"`
	// BreakEvenDays is BreakEvenRuns in whole days at RunsPerDay, the rate the BenchRun states.
	BreakEvenDays *int64 `json:"breakEvenDays,omitempty"`
	RunsPerDay    int32  `json:"runsPerDay,omitempty"`
	// Cache is what keeping the cache this run read costs over time, when a BenchRun priced it.
	Cache *CacheCost `json:"cache,omitempty"`

	// Streams is how many query streams ran at once, each its own permutation of the queries (1: the
	// workload's order alone; absent in results made before streams existed).
	Streams int `json:"streams,omitempty"`
	// StreamMillis is each stream's wall time, warm-ups included, in stream order.
	StreamMillis []int64 `json:"streamMillis,omitempty"`
	// QueriesPerHour is the throughput: the query executions that succeeded in all streams, warm-ups
	// included, per hour of the streams' wall time (first start to last end).
	QueriesPerHour int64 `json:"queriesPerHour,omitempty"`

	// Refresh is, for a run measured during refreshes (--during-refresh), what the runner rewrote
	// while the queries ran and which generations the volume had.
	Refresh *RefreshResult `json:"refresh,omitempty"`
	// Spark is, for the spark engine, what its executors measured (spark.go in bench/spark reports
	// it from run.py).
	Spark *SparkResult `json:"spark,omitempty"`
}

// RefreshResult is what a run measured during refreshes did to its bucket: every EveryMillis it
// rewrote Percent of the Files the workload names (same bytes, new ETag), Rewrites in all over
// Rounds periods. On a volume input, ReadGeneration is the generation every query read (held for the
// whole run) and FirstGeneration and LastGeneration the newest the volume had at the start and the
// end: LastGeneration > FirstGeneration says syncs published while the queries ran.
type RefreshResult struct {
	Percent         int    `json:"percent"`
	EveryMillis     int64  `json:"everyMillis"`
	Files           int    `json:"files"`
	Rounds          int    `json:"rounds"`
	Rewrites        int    `json:"rewrites"`
	ReadGeneration  int64  `json:"readGeneration,omitempty"`
	FirstGeneration int64  `json:"firstGeneration,omitempty"`
	LastGeneration  int64  `json:"lastGeneration,omitempty"`
	Error           string `json:"error,omitempty"`
	ErrorReason     string `json:"errorReason,omitempty"`
}

// CacheCost is what keeping a cache costs over time, in millionths of the result's currency: its
// storage per month and its refreshes per day (the BenchRun status's cache figures).
type CacheCost struct {
	StorageClass          string `json:"storageClass,omitempty"`
	Copies                int32  `json:"copies,omitempty"`
	StorageBytes          int64  `json:"storageBytes,omitempty"`
	StorageMicrosPerMonth *int64 `json:"storageMicrosPerMonth,omitempty"`
	SyncIntervalSeconds   int64  `json:"syncIntervalSeconds,omitempty"`
	RefreshBytesPerDay    int64  `json:"refreshBytesPerDay,omitempty"`
	RefreshMicrosPerDay   *int64 `json:"refreshMicrosPerDay,omitempty"`
}

// benchSummaryPrefix marks an encoded summary, so a reader can tell it from plain text.
const benchSummaryPrefix = "pqcache-bench-v1:"

// EncodeBenchSummary packs a result for a termination message: per-iteration times and stderr tails
// are dropped (the per-query summary is kept), the JSON is gzipped and base64-encoded, and must fit in
// limit bytes; 22 queries take about 1.5 KB.
func EncodeBenchSummary(res *BenchResult, limit int) ([]byte, error) {
	c := *res
	c.Queries = make([]QueryResult, len(res.Queries))
	for i, q := range res.Queries {
		q.Millis, q.StartupMillis, q.WallMillis = nil, nil, nil
		if len(q.StderrTail) > 160 {
			q.StderrTail = q.StderrTail[cutPoint(q.StderrTail, len(q.StderrTail)-160):]
		}
		c.Queries[i] = q
	}
	for {
		data, err := json.Marshal(&c)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		out := []byte(benchSummaryPrefix + base64.StdEncoding.EncodeToString(buf.Bytes()))
		if len(out) <= limit {
			return out, nil
		}
		trimmed := false
		for i := range c.Queries {
			if c.Queries[i].StderrTail != "" {
				c.Queries[i].StderrTail, trimmed = "", true
			}
		}
		if !trimmed {
			return nil, fmt.Errorf("the summary of %d queries takes %d bytes, more than %d", len(c.Queries), len(out), limit)
		}
	}
}

// DecodeBenchSummary reads what EncodeBenchSummary wrote.
func DecodeBenchSummary(s string) (*BenchResult, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), benchSummaryPrefix)
	if !ok {
		return nil, fmt.Errorf("not a pqcache bench summary")
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	var res BenchResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	return &res, nil
}
