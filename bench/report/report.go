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

// Package report turns benchmark results into a page people compare by looking: per-query bar charts
// of median time and of peak memory, one series per run (configuration × input path), the geometric
// means, and a table. The HTML is self-contained: inline CSS and SVG drawn here, no scripts, nothing
// fetched when it is opened.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
)

// palette has one colour per series (repeating past eight).
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"}

// Series is one run in the report.
type Series struct {
	Label  string
	Color  string
	Result *wire.BenchResult
}

func seriesOf(results []*wire.BenchResult) []Series {
	out := make([]Series, len(results))
	for i, r := range results {
		out[i] = Series{Label: seriesLabel(r), Color: palette[i%len(palette)], Result: r}
	}
	return out
}

// seriesLabel names a run: its label, else its engine and data.
func seriesLabel(r *wire.BenchResult) string {
	if r.Label != "" {
		return r.Label
	}
	return fmt.Sprintf("%s %s", r.Engine, r.Data)
}

// bars is one series of a chart: a run, and the figure of each query it draws.
type bars struct {
	Label, Color string
	Result       *wire.BenchResult
	Value        func(*wire.QueryResult) float64
}

// barsOf draws the same figure of every series.
func barsOf(series []Series, value func(*wire.QueryResult) float64) []bars {
	out := make([]bars, len(series))
	for i, s := range series {
		out[i] = bars{Label: s.Label, Color: s.Color, Result: s.Result, Value: value}
	}
	return out
}

// queryNames is the union of the queries run, in the order they first appear (the workload's).
func queryNames(results []*wire.BenchResult) []string {
	seen := map[string]bool{}
	var qs []string
	for _, r := range results {
		for _, q := range r.Queries {
			if !seen[q.Name] {
				seen[q.Name] = true
				qs = append(qs, q.Name)
			}
		}
	}
	return qs
}

func find(r *wire.BenchResult, q string) *wire.QueryResult {
	for i := range r.Queries {
		if r.Queries[i].Name == q {
			return &r.Queries[i]
		}
	}
	return nil
}

// chart draws a grouped bar chart: one group per query, one bar per series, as SVG.
func chart(title, unit string, series []bars, qs []string) template.HTML {
	var grid []barSeries
	for _, s := range series {
		row := barSeries{Label: s.Label, Color: s.Color}
		for _, q := range qs {
			var cell barCell
			if s.Result != nil {
				if qr := find(s.Result, q); qr != nil {
					cell = barCell{Value: s.Value(qr), OK: qr.Status == wire.StatusSucceeded, Status: qr.Status}
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		grid = append(grid, row)
	}
	return drawBars(title, unit, qs, grid)
}

// barSeries is one series of bars: a label, a colour, and a cell per category.
type barSeries struct {
	Label, Color string
	Cells        []barCell
}

// barCell is one bar: a value when OK; else, with a Status, a failure marker; else nothing. Hi > 0
// draws a range from Lo to Hi over the bar (the verdict's fastest to slowest iterations).
type barCell struct {
	Value  float64
	OK     bool
	Status string
	Lo, Hi float64
}

// drawBars draws a grouped bar chart as SVG: one group per category, one bar per series.
func drawBars(title, unit string, categories []string, series []barSeries) template.HTML {
	const (
		width, height         = 960, 320
		left, right, top, bot = 64, 16, 28, 40
	)
	maxV := 0.0
	for _, s := range series {
		for _, c := range s.Cells {
			if c.OK {
				maxV = math.Max(maxV, math.Max(c.Value, c.Hi))
			}
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	plotW, plotH := float64(width-left-right), float64(height-top-bot)
	groupW := plotW / float64(max(len(categories), 1))
	barW := groupW * 0.8 / float64(max(len(series), 1))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, width, height, width, height, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s (%s)</text>`, left, template.HTMLEscapeString(title), template.HTMLEscapeString(unit))
	for i := 0; i <= 4; i++ { // grid and axis labels
		v := maxV * float64(i) / 4
		y := float64(top) + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="axis" text-anchor="end">%s</text>`,
			left, width-right, y, y, left-6, y+4, short(v))
	}
	for gi, category := range categories {
		x0 := float64(left) + groupW*float64(gi) + groupW*0.1
		for si, s := range series {
			x := x0 + barW*float64(si)
			what := template.HTMLEscapeString(s.Label + " " + category)
			switch c := s.Cells[gi]; {
			case c.OK:
				h := plotH * c.Value / maxV
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" class="bar"><title>%s: %s %s</title></rect>`,
					x, float64(top)+plotH-h, barW, math.Max(h, 0.5), template.HTMLEscapeString(s.Color), what, short(c.Value), template.HTMLEscapeString(unit))
				if c.Hi > 0 {
					drawRange(&b, x+barW/2, float64(top)+plotH-plotH*c.Lo/maxV, float64(top)+plotH-plotH*c.Hi/maxV, what, c, unit)
				}
			case c.Status != "":
				// A failure: a hatched marker at the base, labelled with the status.
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="6" class="failed"><title>%s: %s</title></rect>`, x, float64(top)+plotH-6, barW, what, template.HTMLEscapeString(c.Status))
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>`, x0+groupW*0.4, height-bot+16, template.HTMLEscapeString(category))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: the markup is this function's own; every text in it (labels, categories, units, statuses) is escaped above
}

// drawRange draws a range as a whisker over a bar: a vertical line from yLo to yHi with caps.
func drawRange(b *strings.Builder, x, yLo, yHi float64, what string, c barCell, unit string) {
	fmt.Fprintf(b, `<g class="range"><title>%s: %s–%s %s</title><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/></g>`,
		what, short(c.Lo), short(c.Hi), template.HTMLEscapeString(unit), x, x, yLo, yHi, x-4, x+4, yLo, yLo, x-4, x+4, yHi, yHi)
}

func short(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// style is the CSS of both pages.
const style = `{{define "style"}}<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} h2{font-size:16px;margin-top:28px} .chart{display:block;margin:12px 0 24px;max-width:100%;height:auto}
.title{font-weight:600;font-size:14px} .range line{stroke:#222;stroke-width:1.5} .axis{font-size:11px;fill:#555} .grid{stroke:#ddd}
.failed{fill:#c00;opacity:.6} table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right} th:first-child,td:first-child{text-align:left}
.legend span{display:inline-block;margin-right:16px} .legend i,.answer i{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-1px}
#verdict{max-width:980px} .answer{font-size:15px;margin:8px 0}
</style>{{end}}`

var page = template.Must(template.Must(template.New("report").Parse(style)).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pqcache benchmark report</title>
{{template "style"}}</head><body>
<h1>pqcache benchmark report</h1>
<p class="legend">{{range .Series}}<span><i style="background:{{.Color}}"></i>{{.Label}}</span>{{end}}</p>
<table><tr><th>run</th><th>geometric mean</th><th>typical spread</th><th>query time</th><th>geometric mean, whole process</th><th>failed</th><th>wall time</th><th>iterations</th></tr>
{{range .Runs}}<tr><td>{{.Label}}</td><td>{{.Result.GeometricMeanMillis}} ms</td><td>{{.Spread}}</td><td>{{.Timed}}</td><td>{{.WallMean}}</td><td>{{len .Result.FailedQueries}}</td><td>{{.Result.WallMillis}} ms</td><td>{{.Result.Iterations}} (+{{.Result.Warmups}} warm-up)</td></tr>
{{end}}</table>
{{.StreamsTable}}
{{.SparkTable}}
{{.TimeChart}}
{{.DistributionChart}}
{{.MemoryChart}}
<table><tr><th>query</th>{{range .Series}}<th>{{.Label}}: median</th><th>start-up</th><th>wall</th><th>peak memory</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Query}}</td>{{range .Cells}}<td>{{.Time}}</td><td>{{.Startup}}</td><td>{{.Wall}}</td><td>{{.Memory}}</td>{{end}}</tr>
{{end}}</table>
</body></html>
`))

type cell struct{ Time, Startup, Wall, Memory string }

// seriesView is a row of the runs table: a run and how it was timed (timing.go).
type seriesView struct {
	Series
	Timed, WallMean string
}

type row struct {
	Query string
	Cells []cell
}

// WriteHTML writes the self-contained report page. Results of more than one engine or input path get
// the engine report, which opens with the verdict: which input won per engine, by how much, and what
// each costs.
func WriteHTML(w io.Writer, results []*wire.BenchResult) error {
	if compares(results) {
		return writeEnginesHTML(w, results)
	}
	series := seriesOf(results)
	qs := queryNames(results)
	var rows []row
	for _, q := range qs {
		r := row{Query: q}
		for _, s := range series {
			c := cell{Time: "–", Startup: "–", Wall: "–", Memory: "–"}
			if qr := find(s.Result, q); qr != nil {
				if qr.Status == wire.StatusSucceeded {
					c = cell{Time: spreadText(qr), Startup: startupText(s.Result, qr), Wall: wallText(qr),
						Memory: fmt.Sprintf("%.0f MiB", float64(qr.PeakMemoryBytes)/(1<<20))}
				} else {
					c = cell{Time: qr.Status, Startup: qr.Status, Wall: qr.Status, Memory: qr.Status}
				}
			}
			r.Cells = append(r.Cells, c)
		}
		rows = append(rows, r)
	}
	var runs []seriesView
	for _, s := range series {
		runs = append(runs, seriesView{Series: s, Timed: howTimed(s.Result), WallMean: wallMeanText(s.Result)})
	}
	return page.Execute(w, map[string]any{
		"Series":    series,
		"Runs":      runs,
		"Rows":      rows,
		"TimeChart": chart("Median time per query", "ms", barsOf(series, medianOf), qs),
		// The distribution and the streams' throughput, for results that have them (distribution.go).
		"DistributionChart": distributionChart("Query time distribution", barsOf(series, medianOf), qs),
		"StreamsTable":      streamsTable(results),
		"SparkTable":        sparkTable(results),
		"MemoryChart":       chart("Peak memory per query", "MiB", barsOf(series, func(q *wire.QueryResult) float64 { return float64(q.PeakMemoryBytes) / (1 << 20) }), qs),
	})
}

// compares says whether results compare engines or input paths (else they are runs side by side).
func compares(results []*wire.BenchResult) bool {
	return len(engines(results)) > 1 || len(compare(results).Inputs) > 1
}

func medianOf(q *wire.QueryResult) float64 { return float64(q.MedianMillis) }

// WriteMarkdown writes one table per run, for pasting into docs; results of more than one engine
// start with the engines side by side, as the HTML report shows them.
func WriteMarkdown(w io.Writer, results []*wire.BenchResult) error {
	if compares(results) {
		if err := writeEnginesMarkdown(w, results); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "## Runs\n\n"); err != nil {
			return err
		}
	}
	for _, s := range seriesOf(results) {
		if _, err := fmt.Fprintf(w, "### %s\n\n", s.Label); err != nil {
			return err
		}
		if err := bench.WriteMarkdown(w, s.Result); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return nil
}
