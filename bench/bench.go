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
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/memory"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
)

// Invocation is one run of one query: what an engine's process is told.
type Invocation struct {
	// Query is the query's name in the workload.
	Query string
	// Workload is the resolved workload (JSON, workload.Resolved): each table's files and each
	// query's SQL and Polars form.
	Workload string
	// Data is the data root the workload was resolved against: a directory or an s3:// URL.
	Data string
}

// Engine starts the process that runs one query.
type Engine interface {
	// Name identifies the engine in results ("duckdb", "polars", "command").
	Name() string
	// Command returns the command that runs one query and writes its result rows to stdout, one per
	// line, in the canonical row format (bench/canon).
	Command(ctx context.Context, inv Invocation) (*exec.Cmd, error)
}

// CommandEngine runs any command per query: "{query}", "{data}" and "{workload}" in its arguments are
// replaced by the query's name, the data root and the resolved workload file.
type CommandEngine struct {
	Args []string
}

// Name is "command".
func (CommandEngine) Name() string { return "command" }

// Command builds the query's command line.
func (e CommandEngine) Command(ctx context.Context, inv Invocation) (*exec.Cmd, error) {
	if len(e.Args) == 0 {
		return nil, errors.New("the command engine needs a command")
	}
	r := strings.NewReplacer("{query}", inv.Query, "{data}", inv.Data, "{workload}", inv.Workload)
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
	// SampleInterval is the memory sampling period; 0 means 50 ms.
	SampleInterval time.Duration
	// Progress, if set, is told about each finished query.
	Progress func(wire.QueryResult)
	// Label is copied into the result.
	Label string
	// Config and Input name the resource configuration and the input path in reports, which compare
	// engines within one configuration × input; both are copied into the result.
	Config, Input string
	// NetInterfaces selects the network interfaces whose received bytes, read before and after each
	// query iteration, are the queries' network reads (NetworkReadBytes). The zero value counts every
	// interface but the loopback: in a pod, the pod's own traffic, which during a query is its S3
	// reads. Standalone against a server on 127.0.0.1, only the loopback carries them ("lo").
	NetInterfaces netdev.Interfaces
}

// Run runs every query Warmups + Iterations times, each in a fresh process, and returns the results.
// It returns an error only when ctx ends; failing queries are results.
func Run(ctx context.Context, spec Spec) (*wire.BenchResult, error) {
	if spec.Iterations < 1 {
		spec.Iterations = 1
	}
	res := &wire.BenchResult{Label: spec.Label, Engine: spec.Engine.Name(), Data: spec.Data, Config: spec.Config, Input: spec.Input,
		Workload: spec.Workload.Workload, Start: time.Now().UTC(), Iterations: spec.Iterations, Warmups: spec.Warmups}
	dir, err := os.MkdirTemp("", "pqcache-bench-")
	if err != nil {
		return res, fmt.Errorf("a directory for the workload: %w", err)
	}
	// Only the workload file is in it; a leftover temporary directory does not change the results.
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, "workload.json")
	if err := spec.Workload.Write(file); err != nil {
		return res, fmt.Errorf("writing the workload: %w", err)
	}
	for _, query := range spec.Workload.Queries {
		q := query.Name
		inv := Invocation{Query: q, Workload: file, Data: spec.Data}
		qr := wire.QueryResult{Name: q, Status: wire.StatusSucceeded}
		for i := 0; i < spec.Warmups+spec.Iterations; i++ {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			it := runOnce(ctx, spec, inv)
			// Every iteration's transfer is the run's, warm-ups and failed ones included: it was paid for.
			res.NetworkReadBytes += it.netBytes
			if it.status != wire.StatusSucceeded {
				qr.Status, qr.ExitCode, qr.StderrTail = it.status, it.exitCode, it.stderrTail
				break
			}
			if qr.Digest != "" && it.digest != qr.Digest {
				qr.Status, qr.StderrTail = wire.StatusFailed, fmt.Sprintf("iteration %d returned other rows than the first (digest %s, then %s)", i+1, qr.Digest, it.digest)
				break
			}
			qr.Rows, qr.Digest = it.rows, it.digest
			if i < spec.Warmups {
				continue
			}
			qr.Millis = append(qr.Millis, it.millis)
			if it.peak.Total > qr.PeakMemoryBytes {
				qr.PeakMemoryBytes, qr.MemorySource = it.peak.Total, it.source
			}
			qr.PeakAnonBytes = max(qr.PeakAnonBytes, it.peak.Anon)
			qr.PeakFileBytes = max(qr.PeakFileBytes, it.peak.File)
			qr.NetworkReadBytes = max(qr.NetworkReadBytes, it.netBytes)
		}
		if qr.Status == wire.StatusSucceeded {
			summarize(&qr)
		} else {
			qr.Millis, qr.Rows, qr.Digest = nil, 0, ""
			res.FailedQueries = append(res.FailedQueries, q)
		}
		res.Queries = append(res.Queries, qr)
		if spec.Progress != nil {
			spec.Progress(qr)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err // stopped during the last query: its result is not a measurement
	}
	res.WallMillis = time.Since(res.Start).Milliseconds()
	res.GeometricMeanMillis = geometricMean(res.Queries)
	if v, src, ok := memory.CgroupPeak(); ok {
		res.CgroupPeakBytes, res.CgroupPeakSource = v, src
	}
	return res, nil
}

type iteration struct {
	status     string
	millis     int64
	peak       memory.Usage
	source     string
	rows       int64
	digest     string
	exitCode   int
	stderrTail string
	// netBytes is what the selected interfaces received while the query ran.
	netBytes int64
}

// stderrTailBytes is how much of a failed query's stderr is kept.
const stderrTailBytes = 2048

func runOnce(parent context.Context, spec Spec, inv Invocation) iteration {
	ctx := parent
	if spec.QueryTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, spec.QueryTimeout)
		defer cancel()
	}
	cmd, err := spec.Engine.Command(ctx, inv)
	if err != nil {
		return iteration{status: wire.StatusFailed, stderrTail: err.Error()}
	}
	// Its own process group, so a timeout stops the whole tree the engine started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return iteration{status: wire.StatusFailed, stderrTail: err.Error()}
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	// The kernel's max RSS of a child started with vfork (as Go does) includes the parent's RSS at exec
	// time, so it only says something about the query when it is above ours.
	self, _ := memory.TreeUsage(os.Getpid())
	netBefore := netdev.Read(spec.NetInterfaces)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return iteration{status: wire.StatusFailed, stderrTail: err.Error()}
	}
	preferOOMKill(cmd.Process.Pid)
	sampler := memory.Start(cmd.Process.Pid, spec.SampleInterval)
	rows, digest, readErr := digestRows(stdout)
	waitErr := cmd.Wait()
	elapsed := time.Since(start)
	netBytes := netdev.Read(spec.NetInterfaces).Since(netBefore)
	peak := sampler.Stop()

	it := iteration{status: wire.StatusSucceeded, millis: elapsed.Milliseconds(), rows: rows, digest: digest, peak: peak.AboveBaseline(), source: "sampled", netBytes: netBytes}
	// The kernel's max RSS is the largest single process of the tree: a floor for the tree's peak that
	// a 50 ms sampler can miss.
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss<<10 > self.Total {
		if kernel := ru.Maxrss<<10 - peak.Baseline.Total; kernel > it.peak.Total {
			it.peak.Total, it.source = kernel, "rusage"
		}
	}
	switch {
	case parent.Err() != nil:
		// The run itself was stopped (a signal, its deadline): we killed the query, no OOM killer did.
		it.status = wire.StatusFailed
		it.stderrTail = fmt.Sprintf("query %s was stopped with the run: %v", inv.Query, context.Cause(parent))
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		it.status = wire.StatusTimeout
		it.stderrTail = fmt.Sprintf("query %s ran past its %s timeout and was stopped", inv.Query, spec.QueryTimeout)
	case waitErr != nil:
		it.status, it.exitCode, it.stderrTail = wire.StatusFailed, cmd.ProcessState.ExitCode(), stderr.String()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			// Killed by someone else than us: in a memory-limited container, the OOM killer.
			it.status = wire.StatusOOMKilled
			it.stderrTail = strings.TrimSpace(fmt.Sprintf("killed by SIGKILL (out of memory) after %d ms at a peak of %d MiB\n%s", it.millis, (it.peak.Total+peak.Baseline.Total)>>20, stderr.String()))
		}
	case readErr != nil:
		it.status, it.stderrTail = wire.StatusFailed, "reading the result: "+readErr.Error()
	}
	return it
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

// digestRows counts the lines of r and hashes them as a multiset: the sum of each line's SHA-256
// prefix, so that the same rows in another order give the same digest and a changed, missing or
// repeated row does not.
func digestRows(r io.Reader) (int64, string, error) {
	var rows int64
	var sum uint64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if len(line) == 0 {
			continue
		}
		h := sha256.Sum256(line)
		sum += binary.BigEndian.Uint64(h[:8])
		rows++
	}
	if err := sc.Err(); err != nil {
		_, _ = io.Copy(io.Discard, r)
		return rows, "", err
	}
	return rows, fmt.Sprintf("%016x-%d", sum, rows), nil
}

func median(sorted []int64) int64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// geometricMean of the successful queries' medians (at least 1 ms each, so a 0 ms query does not
// zero the mean).
func geometricMean(qs []wire.QueryResult) int64 {
	var logSum float64
	n := 0
	for _, q := range qs {
		if q.Status == wire.StatusSucceeded {
			logSum += math.Log(float64(max(q.MedianMillis, 1)))
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return int64(math.Round(math.Exp(logSum / float64(n))))
}

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
