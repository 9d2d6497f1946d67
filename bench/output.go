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

import (
	"encoding/csv"
	"fmt"
	"github.com/pqcache/pqcache/api/wire"
	"io"
	"strconv"
	"strings"
)

// CSVOptions fill the columns of a polars-benchmark style timings.csv that a Result does not know.
type CSVOptions struct {
	Version     string // engine version
	IOType      string // input path: volume, s3, claim, ...
	ScaleFactor string
}

// WriteCSV writes one row per measured iteration, with the columns of polars-benchmark's timings.csv
// (solution, version, query_number, duration[s], io_type, scale_factor), so that its tools read it,
// followed by what it lacks: the memory columns and the query's status, then the iteration's start-up
// and whole-process wall time, what duration[s] measures (timing: engine or wall), the isolation and
// the peak above the engine's ready memory. duration[s] is the query time (QueryResult.Millis).
// Failed queries get one row with an empty duration.
func WriteCSV(w io.Writer, res *wire.BenchResult, o CSVOptions) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"solution", "version", "query_number", "duration[s]", "io_type", "scale_factor",
		"peak_memory_bytes", "peak_anon_bytes", "peak_file_bytes", "status",
		"startup[s]", "wall[s]", "timing", "isolation", "peak_above_ready_bytes"}); err != nil {
		return err
	}
	isolation := res.Isolation
	if isolation == "" {
		isolation = wire.IsolationProcess
	}
	for _, q := range res.Queries {
		mem := []string{o.IOType, o.ScaleFactor, i64(q.PeakMemoryBytes), i64(q.PeakAnonBytes), i64(q.PeakFileBytes), q.Status}
		if len(q.Millis) == 0 {
			row := append([]string{res.Engine, o.Version, csvQuery(q.Name), ""}, mem...)
			if err := cw.Write(append(row, "", "", q.Timing, isolation, i64(q.PeakAboveReadyBytes))); err != nil {
				return err
			}
			continue
		}
		for i, ms := range q.Millis {
			row := append([]string{res.Engine, o.Version, csvQuery(q.Name), seconds(ms)}, mem...)
			row = append(row, secondsAt(q.StartupMillis, i), secondsAt(q.WallMillis, i), q.Timing, isolation, i64(q.PeakAboveReadyBytes))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// secondsAt is the i-th of a list of milliseconds in seconds, or "" where there is none.
func secondsAt(ms []int64, i int) string {
	if i >= len(ms) {
		return ""
	}
	return seconds(ms[i])
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

// csvQuery is a query's query_number: TPC-H's number (q7 is 7), as polars-benchmark's tools expect,
// and any other query's name.
func csvQuery(name string) string {
	if n, ok := strings.CutPrefix(name, "q"); ok {
		if _, err := strconv.Atoi(n); err == nil {
			return n
		}
	}
	return name
}

// WriteMarkdown writes a table of the run, one row per query, for pasting into docs.
func WriteMarkdown(w io.Writer, res *wire.BenchResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| query | status | median | min | max | spread | peak memory | anon | file | rows | start-up | process wall | timing |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, q := range res.Queries {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", q.Name, q.Status,
			ms(q.MedianMillis), ms(q.MinMillis), ms(q.MaxMillis), spread(q.SpreadPermille), mib(q.PeakMemoryBytes), mib(q.PeakAnonBytes), mib(q.PeakFileBytes), q.Rows,
			ms(q.MedianStartupMillis), ms(q.MedianWallMillis), q.Timing)
	}
	fmt.Fprintf(&b, "\nGeometric mean of medians: %s; %d of %d queries failed; wall time %s (%d iterations, %d warm-up).\n",
		ms(res.GeometricMeanMillis), len(res.FailedQueries), len(res.Queries), ms(res.WallMillis), res.Iterations, res.Warmups)
	if res.WallGeometricMeanMillis > 0 {
		fmt.Fprintf(&b, "Geometric mean of the median whole-process wall times: %s (%s isolation).\n", ms(res.WallGeometricMeanMillis), orProcess(res.Isolation))
	}
	if res.NetworkReadBytes > 0 {
		fmt.Fprintf(&b, "Network read: %s over the whole run.\n", mib(res.NetworkReadBytes))
	}
	if rr := res.Refresh; rr != nil {
		fmt.Fprintf(&b, "During refresh: %d rewrites of %d%% of %d files every %s; the volume's newest generation went from %d to %d while the queries read %d.\n",
			rr.Rewrites, rr.Percent, rr.Files, ms(rr.EveryMillis), rr.FirstGeneration, rr.LastGeneration, rr.ReadGeneration)
	}
	writeStreamsMarkdown(&b, res)
	_, err := io.WriteString(w, b.String())
	return err
}

// spread writes a query's spread as a percentage; "–" when unknown (one iteration, or a failure).
func spread(p *int64) string {
	if p == nil {
		return "–"
	}
	return "±" + wire.Permille(*p)
}

func orProcess(isolation string) string {
	if isolation == "" {
		return wire.IsolationProcess
	}
	return isolation
}

func ms(v int64) string {
	if v == 0 {
		return "–"
	}
	if v < 10_000 {
		return fmt.Sprintf("%d ms", v)
	}
	return fmt.Sprintf("%.1f s", float64(v)/1000)
}

func mib(v int64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20))
}
