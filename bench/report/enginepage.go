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
	"html/template"
	"io"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
)

var enginePage = template.Must(template.Must(template.New("engines").Parse(style)).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pqcache benchmark report</title>
{{template "style"}}</head><body>
<h1>pqcache benchmark report{{with .Workload}}: {{.}}{{end}}</h1>
<section id="verdict"><h2>Verdict</h2>
{{range .Headlines}}<p class="answer"><i style="background:{{.Color}}"></i><strong>{{.Engine}}</strong>: {{.Answer}}{{with .Cost}} {{.}}{{end}}</p>
{{end}}{{.HeadlineChart}}</section>
<p class="legend">{{range .Engines}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}<span><i style="background:#ccc"></i>lighter bar: file-backed memory</span></p>
{{if .Network}}<h2>Network bytes read</h2>
<p>What each run received over the network while its queries ran (warm-ups and every iteration).</p>
<table><tr><th>configuration / input</th>{{range .Engines}}<th>{{.Name}}</th>{{end}}</tr>
{{range .Network}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<h2>Runs</h2>
<table><tr><th>run</th><th>engine</th><th>geometric mean</th><th>typical spread</th><th>query time</th><th>isolation</th><th>geometric mean, whole process</th><th>failed</th><th>wall time</th><th>iterations</th><th>input read throughput</th><th>network read</th></tr>
{{range .Runs}}<tr><td>{{.Label}}</td><td>{{.Result.Engine}}</td><td>{{.Result.GeometricMeanMillis}} ms</td><td>{{.Spread}}</td><td>{{.Timing}}</td><td>{{.Isolation}}</td><td>{{.WallMean}}</td><td>{{len .Result.FailedQueries}}</td><td>{{.Result.WallMillis}} ms</td><td>{{.Result.Iterations}} (+{{.Result.Warmups}} warm-up)</td><td>{{.Throughput}}</td><td>{{.Network}}</td></tr>
{{end}}</table>
{{.StreamsTable}}
{{.SparkTable}}
{{range .Groups}}<h2>{{.Title}}</h2>
<p class="timed">{{.Timed}}</p>
{{if .Verdict}}<p>{{.Verdict}}</p>{{end}}
<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{.TimeChart}}
{{.DistributionChart}}
{{.MemoryChart}}
{{end}}</body></html>
`))

type engineKey struct{ Name, Color string }

type groupView struct {
	Title, Verdict         string
	Timed                  string
	Head                   []string
	Rows                   [][]string
	TimeChart, MemoryChart template.HTML
	// DistributionChart is the engines' latency distribution (distribution.go), when they have one.
	DistributionChart template.HTML
}

// writeEnginesHTML writes the engine report: first the verdict (headline.go), then the network bytes
// per input, the runs, and per configuration × input a table and charts with the engines side by side.
func writeEnginesHTML(w io.Writer, results []*wire.BenchResult) error {
	c := compare(results)
	qs := queryNames(results)
	var keys []engineKey
	for _, e := range c.Engines {
		keys = append(keys, engineKey{Name: e, Color: c.engineColor(e)})
	}
	var groups []groupView
	for _, g := range c.Groups {
		v := groupView{Title: g.Title(), Timed: c.timedLine(g), Head: c.tableHead(g), Rows: c.tableRows(g, qs)}
		if ev, ok := c.engineVerdict(g); ok {
			v.Verdict = ev.Sentence()
		}
		var times, memory []bars
		for _, e := range c.groupEngines(g) {
			r := g.Runs[e]
			color := c.engineColor(e)
			times = append(times, bars{Label: e, Color: color, Result: r, Value: medianOf})
			memory = append(memory,
				bars{Label: e + " anonymous", Color: color, Result: r, Value: func(q *wire.QueryResult) float64 { return float64(q.PeakAnonBytes) / (1 << 20) }},
				bars{Label: e + " file-backed", Color: lighter(color), Result: r, Value: func(q *wire.QueryResult) float64 { return float64(q.PeakFileBytes) / (1 << 20) }})
		}
		v.TimeChart = chart(g.Title()+": median time per query", "ms", times, qs)
		v.DistributionChart = distributionChart(g.Title()+": query time distribution", times, qs)
		v.MemoryChart = chart(g.Title()+": peak anonymous and file-backed memory per query", "MiB", memory, qs)
		groups = append(groups, v)
	}
	var network [][]string
	if c.measuredNetwork() {
		network = c.networkRows()
	}
	hs := c.headlines()
	return enginePage.Execute(w, map[string]any{
		"Workload":      workloadOf(results),
		"Headlines":     hs,
		"HeadlineChart": c.headlineChart(hs),
		"Engines":       keys,
		"Network":       network,
		"Runs":          runViews(results),
		"Groups":        groups,
		"StreamsTable":  streamsTable(results),
		"SparkTable":    sparkTable(results),
	})
}

// runView is a row of the runs table.
type runView struct {
	Series
	Throughput, Network string
	// Timing, Isolation and WallMean say how the run was timed (timing.go).
	Timing, Isolation, WallMean string
}

func runViews(results []*wire.BenchResult) []runView {
	var out []runView
	for _, s := range seriesOf(results) {
		v := runView{Series: s, Throughput: "–", Network: bytesText(s.Result.NetworkReadBytes),
			Timing: TimingText(s.Result), Isolation: IsolationText(s.Result), WallMean: wallMeanText(s.Result)}
		if p := s.Result.Probe; p != nil && p.BytesPerSecond > 0 {
			v.Throughput = bytesText(p.BytesPerSecond) + "/s"
		}
		out = append(out, v)
	}
	return out
}

// workloadOf names the results' workload when they share one.
func workloadOf(results []*wire.BenchResult) string {
	name := ""
	for i, r := range results {
		if i > 0 && r.Workload != name {
			return ""
		}
		name = r.Workload
	}
	return name
}

// writeEnginesMarkdown writes the engine report as Markdown: the verdict, the network bytes, and per
// configuration × input the table of the HTML page.
func writeEnginesMarkdown(w io.Writer, results []*wire.BenchResult) error {
	c := compare(results)
	qs := queryNames(results)
	var b strings.Builder
	b.WriteString("## Verdict\n\n")
	for _, h := range c.headlines() {
		fmt.Fprintf(&b, "- **%s**: %s", mdText(h.Engine), mdText(h.Answer()))
		if cost := h.Cost(); cost != "" {
			fmt.Fprintf(&b, " %s", mdText(cost))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Engines side by side\n\n")
	if c.measuredNetwork() {
		b.WriteString("### Network bytes read\n\n")
		mdTable(&b, append([]string{"configuration / input"}, c.Engines...), c.networkRows())
		b.WriteString("\n")
	}
	for _, g := range c.Groups {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", mdText(g.Title()), mdText(c.timedLine(g)))
		if ev, ok := c.engineVerdict(g); ok {
			fmt.Fprintf(&b, "%s\n\n", mdText(ev.Sentence()))
		}
		mdTable(&b, c.tableHead(g), c.tableRows(g, qs))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdTable writes a Markdown table; cells are made safe for it.
func mdTable(b *strings.Builder, head []string, rows [][]string) {
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			fmt.Fprintf(b, " %s |", mdText(c))
		}
		b.WriteString("\n")
	}
	line(head)
	b.WriteString(strings.Repeat("|---", len(head)) + "|\n")
	for _, r := range rows {
		line(r)
	}
}

// mdText keeps a name from breaking a table row or a line: a pipe is escaped, line breaks become
// spaces.
func mdText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}
