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

package bench

// Session isolation: one engine process per iteration runs every query in turn, warm, as an
// interactive user's session does. Its stdout separates the queries' rows with wire.QueryDelimiter
// lines, its timing file names each query's time. A query that fails ends its process; the queries
// after it run in a new one, so one failure costs one query, as in process isolation. Memory is the
// session's: a query's peak cannot be told from the earlier ones', so every query of a session gets
// the session's peak (docs/bench.md says so).

import (
	"context"
	"fmt"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// runSessions runs Warmups + Iterations iterations of the workload, each in one process (more when
// a query fails), and records each query's iterations as process isolation does.
func runSessions(ctx context.Context, spec Spec, res *wire.BenchResult, inv Invocation, timingFile string) error {
	accs := make([]*accumulator, len(spec.Workload.Queries))
	for i, q := range spec.Workload.Queries {
		accs[i] = newAccumulator(q.Name)
	}
	for i := 0; i < spec.Warmups+spec.Iterations; i++ {
		measured := i >= spec.Warmups
		var pending []int
		for k, a := range accs {
			if a.Status == wire.StatusSucceeded {
				pending = append(pending, k)
			}
		}
		for first := true; len(pending) > 0; first = false {
			if err := ctx.Err(); err != nil {
				return err
			}
			inv.Queries = inv.Queries[:0]
			for _, k := range pending {
				inv.Queries = append(inv.Queries, accs[k].Name)
			}
			s := runSession(ctx, spec, inv, timingFile)
			res.NetworkReadBytes += s.netBytes
			if s.spark != nil {
				res.Spark = addSparkUsage(res.Spark, *s.spark)
			}
			if first && measured && s.startupOK {
				res.SessionStartupMillis = append(res.SessionStartupMillis, s.startupMillis)
			}
			for k, it := range s.iterations {
				accs[pending[k]].add(it, i, measured)
			}
			pending = pending[len(s.iterations):]
		}
	}
	for _, a := range accs {
		addQuery(res, spec, a.finish())
	}
	return ctx.Err()
}

// session is what one session process did.
type session struct {
	// iterations are the queries' results in order: every query that ended, and the one that
	// failed, if one did; at least one.
	iterations    []iteration
	startupMillis int64
	startupOK     bool
	netBytes      int64
	// spark is what the application's executors used, when the engine reported it.
	spark *wire.SparkResult
}

// queryEnd is a query's end as the runner saw it on stdout.
type queryEnd struct {
	rows        int64
	digest      string
	sinceMillis int64
}

// runSession runs inv.Queries in one process. QueryTimeout bounds each query: the clock restarts
// at each query's end.
func runSession(parent context.Context, spec Spec, inv Invocation, timingFile string) session {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	var timer *time.Timer
	if spec.QueryTimeout > 0 {
		timer = time.AfterFunc(spec.QueryTimeout, func() { cancel(context.DeadlineExceeded) })
		defer timer.Stop()
	}
	failed := func(msg string) session {
		return session{iterations: []iteration{{status: wire.StatusFailed, stderrTail: msg}}}
	}
	cmd, err := spec.Engine.Command(ctx, inv)
	if err != nil {
		return failed(err.Error())
	}
	p, err := startProc(spec, cmd, timingFile)
	if err != nil {
		return failed(err.Error())
	}
	var ends []queryEnd
	last := p.start
	_, _, readErr := scanRows(p.stdout, func(rows int64, digest string) {
		now := time.Now()
		ends = append(ends, queryEnd{rows: rows, digest: digest, sinceMillis: now.Sub(last).Milliseconds()})
		last = now
		if timer != nil {
			timer.Reset(spec.QueryTimeout)
		}
	})
	e := p.wait(spec)
	s := session{netBytes: e.netBytes, spark: e.timings.spark}
	s.startupMillis, s.startupOK = e.timings.startupMillis(p.start.UnixNano())
	for k, end := range ends[:min(len(ends), len(inv.Queries))] {
		it := iteration{status: wire.StatusSucceeded, rows: end.rows, digest: end.digest, wallMillis: end.sinceMillis,
			peak: e.peak, source: e.source, peakAboveReady: e.aboveReady()}
		it.engineMillis, it.engineOK = e.timings.query(inv.Queries[k], false)
		s.iterations = append(s.iterations, it)
	}
	if len(s.iterations) < len(inv.Queries) {
		name := inv.Queries[len(s.iterations)]
		status, code, tail := p.outcome(parent, ctx, spec, e, readErr, name)
		if status == wire.StatusSucceeded {
			status, tail = wire.StatusFailed, fmt.Sprintf("the engine exited before the end of query %s: no %q line after its rows", name, wire.QueryDelimiter)
		}
		s.iterations = append(s.iterations, iteration{status: status, exitCode: code, stderrTail: tail})
	}
	return s
}
