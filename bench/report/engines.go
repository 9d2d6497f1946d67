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

package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
)

// The engine report answers the two questions a BenchRun over several engines asks: per query, how
// do the engines compare on the same data and resources (time, and peak memory split into anonymous
// and file-backed, since Polars maps Parquet files and DuckDB does not); and per engine, which input
// path won and by how much.

// comparison is the results grouped by configuration × input, one run per engine in each group.
type comparison struct {
	// Engines are the engine columns, in order of first appearance.
	Engines []string
	Groups  []group
	// Configs and Inputs are the distinct names, in order of first appearance.
	Configs, Inputs []string
}

// group is one configuration × input: the runs of each engine over it.
type group struct {
	Config, Input string
	Runs          map[string]*wire.BenchResult
}

// Title names the group: "config / input", or the input alone when no configuration is named.
func (g group) Title() string {
	if g.Config == "" {
		return g.Input
	}
	return g.Config + " / " + g.Input
}

// engines returns the distinct engines of results, in order.
func engines(results []*wire.BenchResult) []string {
	var out []string
	for _, r := range results {
		if !slices.Contains(out, r.Engine) {
			out = append(out, r.Engine)
		}
	}
	return out
}

// inputOf is the result's input path: its name when the run knows it (a BenchRun's, or bench
// --io-type), else its data (a directory, an s3:// URL).
func inputOf(r *wire.BenchResult) string {
	if r.Input != "" {
		return r.Input
	}
	return r.Data
}

// compare groups results by configuration × input. Two runs of one engine over one group (the same
// engine with other settings, run by hand) keep both: the second is its own column, by its label.
func compare(results []*wire.BenchResult) comparison {
	var c comparison
	index := map[[2]string]int{}
	for _, r := range results {
		key := [2]string{r.Config, inputOf(r)}
		gi, ok := index[key]
		if !ok {
			gi = len(c.Groups)
			index[key] = gi
			c.Groups = append(c.Groups, group{Config: key[0], Input: key[1], Runs: map[string]*wire.BenchResult{}})
		}
		name := r.Engine
		if _, taken := c.Groups[gi].Runs[name]; taken {
			name = r.Engine + " (" + seriesLabel(r) + ")"
		}
		c.Groups[gi].Runs[name] = r
		if !slices.Contains(c.Engines, name) {
			c.Engines = append(c.Engines, name)
		}
		if !slices.Contains(c.Configs, key[0]) {
			c.Configs = append(c.Configs, key[0])
		}
		if !slices.Contains(c.Inputs, key[1]) {
			c.Inputs = append(c.Inputs, key[1])
		}
	}
	return c
}

// groupEngines are the engines that ran over the group, in the report's order: a group's table and
// charts leave out engines that did not run there (DuckDB cannot read s3://).
func (c comparison) groupEngines(g group) []string {
	var names []string
	for _, e := range c.Engines {
		if g.Runs[e] != nil {
			names = append(names, e)
		}
	}
	return names
}

// engineColor is an engine's colour in every chart of the report.
func (c comparison) engineColor(name string) string {
	return palette[slices.Index(c.Engines, name)%len(palette)]
}

// measuredNetwork says whether any run counted network bytes.
func (c comparison) measuredNetwork() bool {
	for _, g := range c.Groups {
		for _, r := range g.Runs {
			if r.NetworkReadBytes > 0 {
				return true
			}
		}
	}
	return false
}

// verdict compares a few runs (the engines of one group, or one engine's inputs) by the geometric
// mean of their medians over the queries that succeeded in all of them, so that a query one side
// failed does not flatter it.
type verdict struct {
	// Subject says what is compared, as a sentence starts: "For polars", "For polars on 2cpu-4gi",
	// "On 2cpu-4gi / volume".
	Subject string
	// Means are the contenders, fastest first.
	Means   []mean
	Queries int
}

// mean is a contender: the geometric mean of its medians and, when known, its range (the geometric
// means of its fastest and of its slowest iterations).
type mean struct {
	Name   string
	Millis float64
	Lo, Hi float64
	Known  bool
	// Once says the run had one iteration: why its range is unknown.
	Once bool
}

// judge builds the verdict over the named runs (in the given order when tied).
func judge(subject string, names []string, runs map[string]*wire.BenchResult) verdict {
	v := verdict{Subject: subject}
	common := map[string]bool{}
	for i, name := range names {
		ok := map[string]bool{}
		for _, q := range runs[name].Queries {
			if q.Status == wire.StatusSucceeded && (i == 0 || common[q.Name]) {
				ok[q.Name] = true
			}
		}
		common = ok
	}
	v.Queries = len(common)
	if v.Queries == 0 {
		return v
	}
	for _, name := range names {
		v.Means = append(v.Means, meanOf(name, runs[name], common))
	}
	slices.SortStableFunc(v.Means, func(a, b mean) int {
		switch {
		case a.Millis < b.Millis:
			return -1
		case a.Millis > b.Millis:
			return 1
		}
		return 0
	})
	return v
}

// meanOf is a run's geometric mean over the common queries, with its range when every one of them
// ran at least two iterations.
func meanOf(name string, r *wire.BenchResult, common map[string]bool) mean {
	var logMid, logLo, logHi float64
	known := true
	for i := range r.Queries {
		q := &r.Queries[i]
		if !common[q.Name] {
			continue
		}
		logMid += math.Log(float64(max(q.MedianMillis, 1)))
		logLo += math.Log(float64(max(q.MinMillis, 1)))
		logHi += math.Log(float64(max(q.MaxMillis, 1)))
		known = known && knownRange(r, q)
	}
	n := float64(len(common))
	m := mean{Name: name, Millis: math.Exp(logMid / n), Known: known, Once: r.Iterations < 2}
	if known {
		m.Lo, m.Hi = math.Exp(logLo/n), math.Exp(logHi/n)
	}
	return m
}

// Sentence says who won and by how much: "For polars, volume is 3.1x faster than s3; geometric means
// over 22 queries: volume 120 ms (115–126 ms), s3 372 ms (360–390 ms)."
func (v verdict) Sentence() string {
	if v.Queries == 0 {
		return fmt.Sprintf("%s, no query succeeded in every run: nothing to compare.", v.Subject)
	}
	plural := "queries"
	if v.Queries == 1 {
		plural = "query"
	}
	return fmt.Sprintf("%s, %s; geometric means over %d %s: %s.", v.Subject, v.claim(), v.Queries, plural, v.meansText())
}

// claim says how the fastest contender compares with each other one, naming a winner only outside
// the noise: "volume is 3.1x faster than s3 and within noise of mixed-direct (1.02x)", or, when no
// contender is clear of the fastest, "mixed-staged and volume are within noise (1.06x)".
func (v verdict) claim() string {
	win := v.Means[0]
	var faster, tied, ratios []string
	for _, m := range v.Means[1:] {
		ratio := m.Millis / win.Millis
		if withinNoise(win, m) {
			tied = append(tied, fmt.Sprintf("%s (%.2fx)", m.Name, ratio))
			ratios = append(ratios, fmt.Sprintf("%.2fx", ratio))
		} else {
			faster = append(faster, fmt.Sprintf("%.1fx faster than %s", ratio, m.Name))
		}
	}
	if len(faster) == 0 {
		names := []string{win.Name}
		for _, m := range v.Means[1:] {
			names = append(names, m.Name)
		}
		return fmt.Sprintf("%s are within noise (%s)", joinAnd(names), strings.Join(ratios, ", "))
	}
	s := win.Name + " is " + joinAnd(faster)
	if len(tied) > 0 {
		s += " and within noise of " + joinAnd(tied)
	}
	return s
}

// meansText lists the geometric means with their ranges: "volume 120 ms (115–126 ms), s3 372 ms
// (360–390 ms)", and says how contenders of one iteration were judged.
func (v verdict) meansText() string {
	var means []string
	for _, m := range v.Means {
		s := fmt.Sprintf("%s %s", m.Name, millisText(m.Millis))
		if r := m.rangeText(); r != "" {
			s += " (" + r + ")"
		}
		means = append(means, s)
	}
	return strings.Join(means, ", ") + unknownNote(v.Means)
}

func joinAnd(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// engineVerdict compares the engines of a group, when it has more than one.
func (c comparison) engineVerdict(g group) (verdict, bool) {
	names := c.groupEngines(g)
	if len(names) < 2 {
		return verdict{}, false
	}
	return judge("On "+g.Title(), names, g.Runs), true
}

// queryCell is one engine's figures for one query, as the tables print them.
type queryCell struct {
	Time, Peak, Network string
	// Startup and Wall are the median start-up and whole-process wall time beside Time.
	Startup, Wall string
}

func cellOf(r *wire.BenchResult, q string) queryCell {
	qr := find(r, q)
	switch {
	case qr == nil:
		return queryCell{"–", "–", "–", "–", "–"}
	case qr.Status != wire.StatusSucceeded:
		return queryCell{qr.Status, qr.Status, bytesText(qr.NetworkReadBytes), qr.Status, qr.Status}
	}
	return queryCell{Time: spreadText(qr), Peak: anonFile(qr), Network: bytesText(qr.NetworkReadBytes),
		Startup: startupText(r, qr), Wall: wallText(qr)}
}

// anonFile prints a peak as "anonymous / file-backed MiB".
func anonFile(q *wire.QueryResult) string {
	return fmt.Sprintf("%.0f / %.0f MiB", float64(q.PeakAnonBytes)/(1<<20), float64(q.PeakFileBytes)/(1<<20))
}

func millisText(v float64) string {
	if v < 10_000 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f s", v/1000)
}

// bytesText prints a byte count in binary units, "–" for none.
func bytesText(v int64) string {
	if v <= 0 {
		return "–"
	}
	return wire.Bytes(v)
}

// groupNetwork says whether any run of the group counted network bytes.
func groupNetwork(g group) bool {
	for _, r := range g.Runs {
		if r.NetworkReadBytes > 0 {
			return true
		}
	}
	return false
}

// tableHead is the columns of a group's table: per engine its median, then per engine its peak
// (anonymous / file-backed), then, when measured, per engine its network bytes.
func (c comparison) tableHead(g group) []string {
	head := []string{"q"}
	names := c.groupEngines(g)
	for _, e := range names {
		head = append(head, e+" median")
	}
	if groupTimed(g) {
		for _, e := range names {
			head = append(head, e+" start-up", e+" wall")
		}
	}
	for _, e := range names {
		head = append(head, e+" peak (anon/file)")
	}
	if groupNetwork(g) {
		for _, e := range names {
			head = append(head, e+" network read")
		}
	}
	return head
}

// tableRows are a group's table rows, one per query, in the columns of tableHead.
func (c comparison) tableRows(g group, qs []string) [][]string {
	names := c.groupEngines(g)
	var rows [][]string
	for _, q := range qs {
		row := []string{q}
		cells := make([]queryCell, len(names))
		for i, e := range names {
			cells[i] = cellOf(g.Runs[e], q)
			row = append(row, cells[i].Time)
		}
		if groupTimed(g) {
			for _, cl := range cells {
				row = append(row, cl.Startup, cl.Wall)
			}
		}
		for _, cl := range cells {
			row = append(row, cl.Peak)
		}
		if groupNetwork(g) {
			for _, cl := range cells {
				row = append(row, cl.Network)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// networkRows are the network table: per group, each engine's run total.
func (c comparison) networkRows() [][]string {
	var rows [][]string
	for _, g := range c.Groups {
		row := []string{g.Title()}
		for _, e := range c.Engines {
			if r := g.Runs[e]; r != nil {
				row = append(row, bytesText(r.NetworkReadBytes))
			} else {
				row = append(row, "–")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// lighter mixes a "#rrggbb" colour with white: an engine's file-backed bars beside its anonymous ones.
func lighter(color string) string {
	var r, g, b int
	if _, err := fmt.Sscanf(color, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return color
	}
	mix := func(v int) int { return v + (255-v)*11/20 }
	return fmt.Sprintf("#%02x%02x%02x", mix(r), mix(g), mix(b))
}
