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

// Package bench runs queries and measures them: each query in a fresh process (so its memory is its
// own), repeated, timed, its process tree's peak memory sampled, its output reduced to a row count and
// an order-insensitive digest that proves two runs returned the same answer. Failures are data: an
// error, a timeout or an OOM kill is recorded and the run goes on. No Kubernetes imports: `pqcache
// bench` runs it on a laptop, and BenchRun Jobs run the same command.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/memory"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
)

// Invocation is one engine process: what it is told to run.
type Invocation struct {
	// Query is the query's name in the workload, in process isolation.
	Query string
	// Queries are the queries the process runs in turn: Query alone in process isolation, every
	// query of an iteration still to run in session isolation.
	Queries []string
	// Workload is the resolved workload (JSON, workload.Resolved): each table's files and each
	// query's SQL and Polars form.
	Workload string
	// Data is the data root the workload was resolved against: a directory or an s3:// URL.
	Data string
}

// Engine starts the process that runs one query, or in session isolation several in turn.
type Engine interface {
	// Name identifies the engine in results ("duckdb", "polars", "command").
	Name() string
	// Command returns the command that runs inv's queries and writes their result rows to stdout,
	// one per line, in the canonical row format (bench/canon), each query's rows followed by a
	// wire.QueryDelimiter line (optional when it runs one query). It reports its timings to the
	// file $PQCACHE_TIMING_FILE names, if it can (docs/bench.md, "Timing protocol").
	Command(ctx context.Context, inv Invocation) (*exec.Cmd, error)
}

// SessionEngine is an engine that may say it cannot run several queries in one process.
type SessionEngine interface {
	// Sessions says whether Command runs every query of inv.Queries.
	Sessions() bool
}

// SupportsSessions says whether e runs session isolation: it says so, or it does not say.
func SupportsSessions(e Engine) bool {
	s, ok := e.(SessionEngine)
	return !ok || s.Sessions()
}

// CommandEngine runs any command per query: "{query}", "{queries}", "{data}" and "{workload}" in its
// arguments are replaced by the query's name, the comma-separated queries to run in turn (session
// isolation; the query alone in process isolation), the data root and the resolved workload file.
type CommandEngine struct {
	Args []string
}

// Name is "command".
func (CommandEngine) Name() string { return "command" }

// Sessions says whether the command runs several queries: only when it takes {queries}.
func (e CommandEngine) Sessions() bool {
	return slices.ContainsFunc(e.Args, func(a string) bool { return strings.Contains(a, "{queries}") })
}

// Command builds the query's command line.
func (e CommandEngine) Command(ctx context.Context, inv Invocation) (*exec.Cmd, error) {
	if len(e.Args) == 0 {
		return nil, errors.New("the command engine needs a command")
	}
	queries := inv.Queries
	if len(queries) == 0 {
		queries = []string{inv.Query}
	}
	r := strings.NewReplacer("{query}", inv.Query, "{queries}", strings.Join(queries, ","), "{data}", inv.Data, "{workload}", inv.Workload)
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = r.Replace(a)
	}
	return exec.CommandContext(ctx, args[0], args[1:]...), nil
}

// SelfEngine re-executes a program (pqcache itself, for the built-in DuckDB) with a query's arguments:
// a CommandEngine under another name.
type SelfEngine struct {
	CommandEngine
	EngineName string
}

// Name is the engine's name.
func (e SelfEngine) Name() string { return e.EngineName }

// Spec is one benchmark run.
type Spec struct {
	Engine Engine
	// Data is the data root, for engines that read it themselves ({data}) and for reports.
	Data string
	// Workload is what runs: its queries, in order, over its tables' files.
	Workload   *workload.Resolved
	Iterations int
	Warmups    int
	// QueryTimeout bounds one run of one query.
	QueryTimeout time.Duration
	// Isolation is wire.IsolationProcess ("" too) or wire.IsolationSession.
	Isolation string
	// SampleInterval is the memory sampling period; 0 means 50 ms.
	SampleInterval time.Duration
	// Progress, if set, is told about each finished query.
	Progress func(wire.QueryResult)
	// Label is copied into the result.
	Label string
	// Config and Input name the resource configuration and the input path in reports, which compare
	// engines within one configuration × input; both are copied into the result.
	Config, Input string
	// Streams is how many query streams run at once, each its own permutation of the queries
	// (streams.go); 0 and 1 run the queries once, in the workload's order.
	Streams int
	// NetInterfaces selects the network interfaces whose received bytes, read before and after each
	// query iteration, are the queries' network reads (NetworkReadBytes). The zero value counts every
	// interface but the loopback: in a pod, the pod's own traffic, which during a query is its S3
	// reads. Standalone against a server on 127.0.0.1, only the loopback carries them ("lo").
	NetInterfaces netdev.Interfaces
}

// Run runs every query Warmups + Iterations times, in a fresh process each (IsolationProcess) or
// in one process per iteration (IsolationSession), in each of spec.Streams concurrent streams, and
// returns the results. It returns an error
// only when ctx ends; failing queries are results.
func Run(ctx context.Context, spec Spec) (*wire.BenchResult, error) {
	if spec.Iterations < 1 {
		spec.Iterations = 1
	}
	if spec.Isolation == "" {
		spec.Isolation = wire.IsolationProcess
	}
	res := &wire.BenchResult{Label: spec.Label, Engine: spec.Engine.Name(), Data: spec.Data, Config: spec.Config, Input: spec.Input,
		Workload: spec.Workload.Workload, Start: time.Now().UTC(), Iterations: spec.Iterations, Warmups: spec.Warmups, Isolation: spec.Isolation}
	dir, err := os.MkdirTemp("", "pqcache-bench-")
	if err != nil {
		return res, fmt.Errorf("a directory for the workload: %w", err)
	}
	// Only the workload and timing files are in it; a leftover directory does not change the results.
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, "workload.json")
	if err := spec.Workload.Write(file); err != nil {
		return res, fmt.Errorf("writing the workload: %w", err)
	}
	if spec.Streams < 0 || spec.Streams > wire.MaxStreams {
		return res, fmt.Errorf("streams %d: want 1 to %d", spec.Streams, wire.MaxStreams)
	}
	run := runProcesses
	switch spec.Isolation {
	case wire.IsolationProcess:
	case wire.IsolationSession:
		if !SupportsSessions(spec.Engine) {
			return res, fmt.Errorf("the %s engine cannot run a session: a command engine needs {queries} in its command", spec.Engine.Name())
		}
		run = runSessions
	default:
		return res, fmt.Errorf("isolation %q: want %s or %s", spec.Isolation, wire.IsolationProcess, wire.IsolationSession)
	}
	if err := runStreams(ctx, spec, res, run, Invocation{Workload: file, Data: spec.Data}, dir); err != nil {
		return res, err
	}
	setPercentiles(res.Queries)
	res.WallMillis = time.Since(res.Start).Milliseconds()
	res.GeometricMeanMillis = geometricMean(res.Queries, func(q wire.QueryResult) int64 { return q.MedianMillis })
	res.WallGeometricMeanMillis = geometricMean(res.Queries, func(q wire.QueryResult) int64 { return q.MedianWallMillis })
	res.StartupMillis = startupMillis(res)
	if v, src, ok := memory.CgroupPeak(); ok {
		res.CgroupPeakBytes, res.CgroupPeakSource = v, src
	}
	return res, nil
}

// runProcesses runs each query's iterations, each in a fresh process, query after query.
func runProcesses(ctx context.Context, spec Spec, res *wire.BenchResult, inv Invocation, timingFile string) error {
	for _, query := range spec.Workload.Queries {
		inv.Query = query.Name
		acc := newAccumulator(query.Name)
		for i := 0; i < spec.Warmups+spec.Iterations && acc.Status == wire.StatusSucceeded; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			it := runOnce(ctx, spec, inv, timingFile)
			// Every iteration's transfer is the run's, warm-ups and failed ones included: it was paid for.
			res.NetworkReadBytes += it.netBytes
			acc.add(it, i, i >= spec.Warmups)
		}
		addQuery(res, spec, acc.finish())
	}
	// Stopped during the last query: its result is not a measurement.
	return ctx.Err()
}

// addQuery appends a finished query's result and tells Progress.
func addQuery(res *wire.BenchResult, spec Spec, qr wire.QueryResult) {
	if qr.Status != wire.StatusSucceeded {
		res.FailedQueries = append(res.FailedQueries, qr.Name)
	}
	res.Queries = append(res.Queries, qr)
	if spec.Progress != nil {
		spec.Progress(qr)
	}
}

// iteration is one run of one query.
type iteration struct {
	status string
	// wallMillis is the process's wall time (session: since the previous query's end); engineMillis
	// the engine's own query time and startupMillis its start-up, when reported (the ok fields).
	wallMillis, engineMillis, startupMillis int64
	engineOK, startupOK                     bool
	peak                                    memory.Usage
	peakAboveReady                          int64
	source                                  string
	rows                                    int64
	digest                                  string
	exitCode                                int
	stderrTail                              string
	// netBytes is what the selected interfaces received while the query ran.
	netBytes int64
}

// accumulator gathers one query's iterations.
type accumulator struct {
	wire.QueryResult
	engine, wall, startup []int64
	// unreported is set when a measured iteration had no engine time: then Millis are wall times.
	unreported bool
}

func newAccumulator(name string) *accumulator {
	return &accumulator{QueryResult: wire.QueryResult{Name: name, Status: wire.StatusSucceeded}}
}

// add records iteration i (0-based, warm-ups included; measured says whether it counts). The first
// failure ends the query: later calls are ignored.
func (a *accumulator) add(it iteration, i int, measured bool) {
	if a.Status != wire.StatusSucceeded {
		return
	}
	if it.status != wire.StatusSucceeded {
		a.Status, a.ExitCode, a.StderrTail = it.status, it.exitCode, it.stderrTail
		return
	}
	if a.Digest != "" && it.digest != a.Digest {
		a.Status, a.StderrTail = wire.StatusFailed, fmt.Sprintf("iteration %d returned other rows than the first (digest %s, then %s)", i+1, a.Digest, it.digest)
		return
	}
	a.Rows, a.Digest = it.rows, it.digest
	if !measured {
		return
	}
	a.wall = append(a.wall, it.wallMillis)
	if it.engineOK {
		a.engine = append(a.engine, it.engineMillis)
	} else {
		a.unreported = true
	}
	if it.startupOK {
		a.startup = append(a.startup, it.startupMillis)
	}
	if it.peak.Total > a.PeakMemoryBytes {
		a.PeakMemoryBytes, a.MemorySource = it.peak.Total, it.source
	}
	a.PeakAnonBytes = max(a.PeakAnonBytes, it.peak.Anon)
	a.PeakFileBytes = max(a.PeakFileBytes, it.peak.File)
	a.PeakAboveReadyBytes = max(a.PeakAboveReadyBytes, it.peakAboveReady)
	a.NetworkReadBytes = max(a.NetworkReadBytes, it.netBytes)
}

// finish summarises the iterations: the engine's times when it reported every one, else the wall times.
func (a *accumulator) finish() wire.QueryResult {
	q := a.QueryResult
	if q.Status != wire.StatusSucceeded || len(a.wall) == 0 {
		if q.Status == wire.StatusSucceeded {
			q.Status, q.StderrTail = wire.StatusFailed, "no measured iteration"
		}
		q.Rows, q.Digest = 0, ""
		return q
	}
	q.Millis, q.Timing = a.engine, wire.TimingEngine
	if a.unreported {
		q.Millis, q.Timing = a.wall, wire.TimingWall
	}
	q.WallMillis, q.StartupMillis = a.wall, a.startup
	summarize(&q) // min, median, max and spread of q.Millis (spread.go)
	q.MedianWallMillis, q.MedianStartupMillis = median(a.wall), median(a.startup)
	return q
}

// preferOOMKill makes the query process the OOM killer's first choice (oom_score_adj 1000, which an
// unprivileged process may set on its own child): in a memory-limited container the query that
// outgrows the limit must die, not the runner that reports it. The kernel picks the process with the
// largest resident set, and the runner's (its binary's pages, a probe's reads) can be the largest
// while a query is still starting to grow. Best effort: where /proc is not writable the kernel
// chooses as before. Processes the query starts afterwards inherit the value.
func preferOOMKill(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("1000"), 0)
}

// startupMillis is the run's typical start-up (wire.BenchResult.StartupMillis): the median of its
// sessions' start-ups, else of its queries' median start-ups; 0 when the engine reported none.
func startupMillis(res *wire.BenchResult) int64 {
	if res.Isolation == wire.IsolationSession {
		return median(res.SessionStartupMillis)
	}
	var ms []int64
	for _, q := range res.Queries {
		if q.MedianStartupMillis > 0 {
			ms = append(ms, q.MedianStartupMillis)
		}
	}
	return median(ms)
}

// median of vs (0 for none), which it does not change.
func median(vs []int64) int64 {
	n := len(vs)
	if n == 0 {
		return 0
	}
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// geometricMean of a figure of the successful queries (at least 1 ms each, so a 0 ms query does
// not zero the mean).
func geometricMean(qs []wire.QueryResult, figure func(wire.QueryResult) int64) int64 {
	var logSum float64
	n := 0
	for _, q := range qs {
		if q.Status == wire.StatusSucceeded {
			logSum += math.Log(float64(max(figure(q), 1)))
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return int64(math.Round(math.Exp(logSum / float64(n))))
}

// stderrTailBytes is how much of a failed query's stderr is kept.
const stderrTailBytes = 2048

// tailBuffer keeps the last stderrTailBytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > stderrTailBytes {
		t.b = t.b[len(t.b)-stderrTailBytes:]
	}
	return len(p), nil
}

// String is the tail, starting at a whole character: the cut may have fallen inside a multi-byte
// one, whose leftover bytes are dropped.
func (t *tailBuffer) String() string {
	b := t.b
	if len(b) == stderrTailBytes {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return strings.TrimSpace(string(b))
}
