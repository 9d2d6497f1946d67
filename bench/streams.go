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

// Query streams, in the spirit of TPC-H's throughput test: N streams run at once over the same data,
// each its own permutation of the queries, each stream as a run of one stream does (its queries in
// turn, each with its iterations; in session isolation one process per iteration of the stream).
// The queries' times are then the distribution of every stream's executions (p50, p95, p99), and the
// run's throughput is its queries per hour. TPC-H fixes its streams' orders in a table for its 22
// queries; a workload here is any list of queries, so the orders are drawn from a seeded generator
// instead: the same stream of the same number of queries always gets the same order.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
)

// permutationSeed seeds every stream's generator (with the stream's number as the second word): a
// constant, so that orders are reproducible from run to run and machine to machine.
const permutationSeed = 0x7063716368 // "pqcqh"

// Permutations returns each of streams streams' order of n queries, as indexes into the workload's
// list. Stream 0 runs them in the workload's order, so that one stream is the run without streams;
// stream s ≥ 1 a Fisher–Yates shuffle driven by PCG(permutationSeed, s). An order that repeats an
// earlier stream's is drawn again from the same generator, while n! leaves distinct orders to draw
// (from 4 queries on, for up to 16 streams).
func Permutations(n, streams int) [][]int {
	out := make([][]int, 0, streams)
	for s := range streams {
		rng := rand.New(rand.NewPCG(permutationSeed, uint64(s)))
		p := identity(n)
		for s > 0 {
			for i := n - 1; i > 0; i-- {
				j := int(rng.Uint64() % uint64(i+1))
				p[i], p[j] = p[j], p[i]
			}
			repeated := slices.ContainsFunc(out, func(q []int) bool { return slices.Equal(p, q) })
			if !repeated || !moreOrdersThan(n, len(out)) {
				break
			}
		}
		out = append(out, p)
	}
	return out
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// moreOrdersThan says whether n things have more than k orders (n! > k).
func moreOrdersThan(n, k int) bool {
	f := 1
	for i := 2; i <= n && f <= k; i++ {
		f *= i
	}
	return f > k
}

// permuted is w with its queries in the order p.
func permuted(w *workload.Resolved, p []int) *workload.Resolved {
	c := *w
	c.Queries = make([]workload.Query, len(p))
	for i, k := range p {
		c.Queries[i] = w.Queries[k]
	}
	return &c
}

// runner runs one stream's queries (runProcesses or runSessions) into res.
type runner func(ctx context.Context, spec Spec, res *wire.BenchResult, inv Invocation, timingFile string) error

// streamRun is what one stream did.
type streamRun struct {
	res    *wire.BenchResult
	millis int64
	err    error
}

// runStreams runs spec.Streams streams of run at once and records, in res, each query's executions
// over all streams, each stream's time and the throughput. One stream runs as a run without streams
// does, telling Progress of each query as it ends; with several, Progress hears of each query once
// every stream has run it (after the last stream ends).
func runStreams(ctx context.Context, spec Spec, res *wire.BenchResult, run runner, inv Invocation, dir string) error {
	res.Streams = max(spec.Streams, 1)
	start := time.Now()
	if res.Streams == 1 {
		err := run(ctx, spec, res, inv, filepath.Join(dir, "timing"))
		res.StreamMillis = []int64{time.Since(start).Milliseconds()}
		res.QueriesPerHour = queriesPerHour(executions(res, spec.Warmups), time.Since(start))
		return err
	}
	netBefore := netdev.Read(spec.NetInterfaces)
	runs := make([]streamRun, res.Streams)
	var wg sync.WaitGroup
	for s, p := range Permutations(len(spec.Workload.Queries), res.Streams) {
		sub := spec
		sub.Workload, sub.Progress = permuted(spec.Workload, p), nil
		runs[s].res = &wire.BenchResult{}
		wg.Go(func() {
			// Each stream its own timing file: its processes report to it while the others run.
			runs[s].err = run(ctx, sub, runs[s].res, inv, filepath.Join(dir, fmt.Sprintf("timing-%d", s)))
			runs[s].millis = time.Since(start).Milliseconds()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// The interfaces' counters are the namespace's: every stream's reads at once, whole only for the run.
	res.NetworkReadBytes += netdev.Read(spec.NetInterfaces).Since(netBefore)
	n := 0
	for _, r := range runs {
		if r.err != nil {
			return r.err
		}
		res.StreamMillis = append(res.StreamMillis, r.millis)
		res.SessionStartupMillis = append(res.SessionStartupMillis, r.res.SessionStartupMillis...)
		if r.res.Spark != nil {
			res.Spark = addSparkUsage(res.Spark, *r.res.Spark)
		}
		n += executions(r.res, spec.Warmups)
	}
	res.QueriesPerHour = queriesPerHour(n, elapsed)
	for _, q := range spec.Workload.Queries {
		addQuery(res, spec, mergeStreams(q.Name, runs))
	}
	return ctx.Err()
}

// executions counts the query executions of a stream that succeeded: every iteration of each query
// that succeeded, warm-ups included (they ran in the time the throughput divides by).
func executions(res *wire.BenchResult, warmups int) int {
	n := 0
	for _, q := range res.Queries {
		if q.Status == wire.StatusSucceeded {
			n += len(q.Millis) + warmups
		}
	}
	return n
}

// queriesPerHour is n executions in elapsed, per hour.
func queriesPerHour(n int, elapsed time.Duration) int64 {
	if n == 0 || elapsed <= 0 {
		return 0
	}
	return int64(math.Round(float64(n) * float64(time.Hour) / float64(elapsed)))
}

// mergeStreams is query name's result over every stream: all their measured executions, the
// largest peaks, and the first failure, if a stream's run of it failed. Streams that return other
// rows than stream 0 fail the query, as iterations that do. The per-query network bytes are not
// kept: the interfaces' counters mix every stream's reads (the run's total is in the result).
func mergeStreams(name string, runs []streamRun) wire.QueryResult {
	q := wire.QueryResult{Name: name, Status: wire.StatusSucceeded, Timing: wire.TimingEngine}
	wallTiming := false
	for s, r := range runs {
		i := slices.IndexFunc(r.res.Queries, func(x wire.QueryResult) bool { return x.Name == name })
		if i < 0 {
			q.Status, q.StderrTail = wire.StatusFailed, fmt.Sprintf("stream %d did not run it", s)
			continue
		}
		sq := r.res.Queries[i]
		switch {
		case q.Status != wire.StatusSucceeded:
			continue
		case sq.Status != wire.StatusSucceeded:
			q.Status, q.ExitCode, q.StderrTail = sq.Status, sq.ExitCode, fmt.Sprintf("stream %d: %s", s, sq.StderrTail)
			continue
		case q.Digest != "" && sq.Digest != q.Digest:
			q.Status, q.StderrTail = wire.StatusFailed, fmt.Sprintf("stream %d returned other rows than stream 0 (digest %s, then %s)", s, q.Digest, sq.Digest)
			continue
		}
		q.Rows, q.Digest = sq.Rows, sq.Digest
		wallTiming = wallTiming || sq.Timing == wire.TimingWall
		q.Millis = append(q.Millis, sq.Millis...)
		q.WallMillis = append(q.WallMillis, sq.WallMillis...)
		q.StartupMillis = append(q.StartupMillis, sq.StartupMillis...)
		if sq.PeakMemoryBytes > q.PeakMemoryBytes {
			q.PeakMemoryBytes, q.MemorySource = sq.PeakMemoryBytes, sq.MemorySource
		}
		q.PeakAnonBytes = max(q.PeakAnonBytes, sq.PeakAnonBytes)
		q.PeakFileBytes = max(q.PeakFileBytes, sq.PeakFileBytes)
		q.PeakAboveReadyBytes = max(q.PeakAboveReadyBytes, sq.PeakAboveReadyBytes)
	}
	if q.Status != wire.StatusSucceeded || len(q.Millis) == 0 {
		return wire.QueryResult{Name: name, Status: q.Status, ExitCode: q.ExitCode, StderrTail: q.StderrTail}
	}
	if wallTiming {
		// Some stream's engine did not report its time: the wall times are the comparable ones.
		q.Millis, q.Timing = slices.Clone(q.WallMillis), wire.TimingWall
	}
	q.MinMillis, q.MaxMillis, q.MedianMillis = slices.Min(q.Millis), slices.Max(q.Millis), median(q.Millis)
	q.MedianWallMillis, q.MedianStartupMillis = median(q.WallMillis), median(q.StartupMillis)
	return q
}

// percentile is the p-th percentile (0 < p ≤ 100) of vs by the nearest-rank method: the smallest
// value that at least p% of vs do not exceed (0 for none). It does not change vs.
func percentile(vs []int64, p float64) int64 {
	if len(vs) == 0 {
		return 0
	}
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// setPercentiles gives each successful query its p50, p95 and p99 over its measured executions.
func setPercentiles(qs []wire.QueryResult) {
	for i := range qs {
		if q := &qs[i]; q.Status == wire.StatusSucceeded {
			q.P50Millis, q.P95Millis, q.P99Millis = percentile(q.Millis, 50), percentile(q.Millis, 95), percentile(q.Millis, 99)
		}
	}
}

// writeStreamsMarkdown adds to a run's Markdown its throughput, and with several streams each
// stream's time and the queries' percentiles over all streams.
func writeStreamsMarkdown(b *strings.Builder, res *wire.BenchResult) {
	if res.QueriesPerHour > 0 {
		fmt.Fprintf(b, "Throughput: %d queries per hour with %d stream(s).\n", res.QueriesPerHour, max(res.Streams, 1))
	}
	if res.Streams < 2 {
		return
	}
	times := make([]string, len(res.StreamMillis))
	for i, v := range res.StreamMillis {
		times[i] = ms(v)
	}
	fmt.Fprintf(b, "Each stream's time: %s.\n\n| query | executions | p50 | p95 | p99 |\n|---|---|---|---|---|\n", strings.Join(times, ", "))
	for _, q := range res.Queries {
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", q.Name, len(q.Millis), ms(q.P50Millis), ms(q.P95Millis), ms(q.P99Millis))
	}
}
