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

package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/api/runresults"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/report"
)

func (o *options) resultsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "results (RUN | benchrun/RUN)",
		Short: "A BenchRun's per-query results: median time and peak memory per engine / configuration / input, with each result's timing, isolation and start-up",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := o.benchRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if done, err := o.printObject(cmd.OutOrStdout(), run.Status.Results); done {
				return err
			}
			return printResults(cmd.OutOrStdout(), run)
		},
	}
}

func (o *options) reportCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report (RUN | benchrun/RUN) -o FILE",
		Short: "Write a BenchRun's report: a self-contained HTML page that answers first, then the details",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("report needs -o FILE (the HTML page to write)")
			}
			run, err := o.benchRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			results := runresults.Wire(run)
			if len(results) == 0 {
				return fmt.Errorf("BenchRun %s has no results yet (progress %q)", run.Name, run.Status.Progress)
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			err = report.WriteHTML(f, results)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(out) // no half-written page left behind
				return fmt.Errorf("writing %s: %w", out, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d results of BenchRun %s/%s)\n", out, len(results), run.Namespace, run.Name)
			return nil
		},
	}
	// -o is the page here, not kubectl's output format.
	cmd.Flags().StringVarP(&out, "output", "o", "", "The HTML file to write.")
	return cmd
}

// benchRun reads one BenchRun of the namespace.
func (o *options) benchRun(ctx context.Context, arg string) (*datav1alpha1.BenchRun, error) {
	name, err := objectName(arg, benchRunKind)
	if err != nil {
		return nil, err
	}
	c, ns, err := o.namedClient()
	if err != nil {
		return nil, err
	}
	var run datav1alpha1.BenchRun
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &run); err != nil {
		return nil, fmt.Errorf("benchrun %s/%s: %w", ns, name, err)
	}
	return &run, nil
}

// printResults writes one row per query and one column per recorded result.
func printResults(w io.Writer, run *datav1alpha1.BenchRun) error {
	results := runresults.Wire(run)
	if len(results) == 0 {
		fmt.Fprintf(w, "BenchRun %s/%s has no results yet (progress %q).\n", run.Namespace, run.Name, run.Status.Progress)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "QUERY\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s / %s / %s\t", r.Engine, r.Config, r.Input)
	}
	fmt.Fprintln(tw)
	var names []string
	seen := map[string]bool{}
	for _, r := range results {
		for _, q := range r.Queries {
			if !seen[q.Name] {
				seen[q.Name] = true
				names = append(names, q.Name)
			}
		}
	}
	for _, name := range names {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range results {
			fmt.Fprintf(tw, "%s\t", cell(r, name))
		}
		fmt.Fprintln(tw)
	}
	footer(tw, "geometric mean", results, func(r *wire.BenchResult) string {
		return (time.Duration(r.GeometricMeanMillis) * time.Millisecond).String()
	})
	if timed(results) {
		timingFooters(tw, results)
	}
	footer(tw, "cost of a run", results, func(r *wire.BenchResult) string {
		if r.CostMicros == nil {
			return "-"
		}
		return fmt.Sprintf("%.6f %s", float64(*r.CostMicros)/1e6, r.Currency)
	})
	footer(tw, "break-even (runs)", results, func(r *wire.BenchResult) string {
		if r.BreakEvenRuns == nil {
			return "-"
		}
		return fmt.Sprint(*r.BreakEvenRuns)
	})
	if slices.ContainsFunc(results, func(r *wire.BenchResult) bool { return r.Cache != nil }) {
		footer(tw, "cache, per day", results, cacheDaily)
	}
	streamFooters(tw, results)
	sparkFooters(tw, results)
	return tw.Flush()
}

// cacheDaily is what keeping the cache a result read costs a day: its storage (a month's over 30
// days) and its refreshes; "-" when the BenchRun did not price it.
func cacheDaily(r *wire.BenchResult) string {
	c := r.Cache
	if c == nil || c.StorageMicrosPerMonth == nil {
		return "-"
	}
	day := *c.StorageMicrosPerMonth / 30
	if c.RefreshMicrosPerDay != nil {
		day += *c.RefreshMicrosPerDay
	}
	return fmt.Sprintf("%.6f %s", float64(day)/1e6, r.Currency)
}

// streamFooters say, for runs of several concurrent query streams, how many and the throughput.
func streamFooters(w io.Writer, results []*wire.BenchResult) {
	several := false
	for _, r := range results {
		several = several || r.Streams > 1
	}
	if !several {
		return
	}
	footer(w, "streams", results, func(r *wire.BenchResult) string { return fmt.Sprint(max(r.Streams, 1)) })
	footer(w, "queries per hour", results, func(r *wire.BenchResult) string {
		if r.QueriesPerHour == 0 {
			return "-"
		}
		return fmt.Sprint(r.QueriesPerHour)
	})
}

// sparkFooters say what the Spark runs' driver and executors used.
func sparkFooters(w io.Writer, results []*wire.BenchResult) {
	spark := false
	for _, r := range results {
		spark = spark || r.Spark != nil
	}
	if !spark {
		return
	}
	figure := func(f func(r *wire.BenchResult, sp *wire.SparkResult) string) func(*wire.BenchResult) string {
		return func(r *wire.BenchResult) string {
			if r.Spark == nil {
				return "-"
			}
			return f(r, r.Spark)
		}
	}
	footer(w, "spark executors", results, figure(func(_ *wire.BenchResult, sp *wire.SparkResult) string { return fmt.Sprint(sp.Executors) }))
	footer(w, "spark driver peak", results, figure(func(r *wire.BenchResult, _ *wire.SparkResult) string { return wire.Quantity(r.CgroupPeakBytes) }))
	footer(w, "spark largest executor peak", results, figure(func(_ *wire.BenchResult, sp *wire.SparkResult) string {
		if len(sp.ExecutorPeakBytes) == 0 {
			return "-"
		}
		return wire.Quantity(sp.ExecutorPeakBytes[0])
	}))
	footer(w, "spark bucket bytes (lower bound)", results, figure(func(_ *wire.BenchResult, sp *wire.SparkResult) string { return wire.Quantity(sp.S3ReadBytes) }))
	footer(w, "spark core-seconds", results, figure(func(_ *wire.BenchResult, sp *wire.SparkResult) string { return fmt.Sprint(sp.CoreSeconds) }))
}

// timed says whether any result says how it was timed: results recorded before BenchRuns had
// isolations and whole-process figures get no rows of dashes.
func timed(results []*wire.BenchResult) bool {
	for _, r := range results {
		if r.Isolation != "" || r.WallGeometricMeanMillis > 0 {
			return true
		}
	}
	return false
}

// timingFooters say what each result's times measure, in which isolation, and what start-up and
// whole processes took beside them.
func timingFooters(w io.Writer, results []*wire.BenchResult) {
	footer(w, "query time", results, report.TimingText)
	footer(w, "isolation", results, report.IsolationText)
	footer(w, "start-up (median)", results, func(r *wire.BenchResult) string {
		if ms := report.StartupMillis(r); ms > 0 {
			return (time.Duration(ms) * time.Millisecond).String()
		}
		return "-"
	})
	footer(w, "geometric mean, whole process", results, func(r *wire.BenchResult) string {
		if r.WallGeometricMeanMillis <= 0 {
			return "-"
		}
		return (time.Duration(r.WallGeometricMeanMillis) * time.Millisecond).String()
	})
}

// footer writes a row of one figure per result.
func footer(w io.Writer, name string, results []*wire.BenchResult, figure func(*wire.BenchResult) string) {
	fmt.Fprintf(w, "%s\t", name)
	for _, r := range results {
		fmt.Fprintf(w, "%s\t", figure(r))
	}
	fmt.Fprintln(w)
}

// cell is one query's median (with its spread when it ran several iterations; its p50, p95 and p99
// when several query streams ran) and peak memory in one result, or its status when it did not
// succeed.
func cell(r *wire.BenchResult, name string) string {
	for _, q := range r.Queries {
		if q.Name != name {
			continue
		}
		if q.Status != "Succeeded" {
			return q.Status
		}
		ms := func(v int64) string { return time.Duration(v * int64(time.Millisecond)).String() }
		median := ms(q.MedianMillis)
		if q.SpreadPermille != nil {
			median += " ±" + wire.Permille(*q.SpreadPermille)
		}
		if r.Streams > 1 && q.P50Millis > 0 {
			median = fmt.Sprintf("p50 %s p95 %s p99 %s", ms(q.P50Millis), ms(q.P95Millis), ms(q.P99Millis))
		}
		return fmt.Sprintf("%s, %s", median, wire.Quantity(q.PeakMemoryBytes))
	}
	return "-"
}
