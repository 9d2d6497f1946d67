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

// The latency distribution, not only medians: per query and run, a box from p50 to p95, whiskers
// from the fastest to the slowest execution and a tick at p99, drawn from the figures a BenchRun's
// status keeps too (a result read from kubectl has no per-execution times). And the throughput of
// runs with query streams: queries per hour and each stream's time.

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
)

// hasDistribution says whether a result has percentiles to draw (results made before they existed
// have none, and get no chart).
func hasDistribution(results []*wire.BenchResult) bool {
	for _, r := range results {
		for _, q := range r.Queries {
			if q.Status == wire.StatusSucceeded && q.P50Millis > 0 {
				return true
			}
		}
	}
	return false
}

// distributionChart draws, as SVG in the bar charts' frame, one group per query and in it one box
// per series: the box from p50 to p95, whiskers from min to max, a tick at p99. Empty when no series
// has percentiles.
func distributionChart(title string, series []bars, qs []string) template.HTML {
	var results []*wire.BenchResult
	for _, s := range series {
		results = append(results, s.Result)
	}
	if !hasDistribution(results) {
		return ""
	}
	const (
		width, height         = 960, 320
		left, right, top, bot = 64, 16, 28, 40
	)
	maxV := 1.0
	for _, r := range results {
		for _, q := range r.Queries {
			maxV = math.Max(maxV, float64(q.MaxMillis))
		}
	}
	plotW, plotH := float64(width-left-right), float64(height-top-bot)
	groupW := plotW / float64(max(len(qs), 1))
	boxW := groupW * 0.8 / float64(max(len(series), 1))
	y := func(v int64) float64 { return float64(top) + plotH - plotH*float64(v)/maxV }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart distribution" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, width, height, width, height, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s (ms; box p50–p95, whiskers min–max, tick p99)</text>`, left, template.HTMLEscapeString(title))
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		gy := float64(top) + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="axis" text-anchor="end">%s</text>`,
			left, width-right, gy, gy, left-6, gy+4, short(v))
	}
	for gi, query := range qs {
		x0 := float64(left) + groupW*float64(gi) + groupW*0.1
		for si, s := range series {
			q := find(s.Result, query)
			if q == nil || q.Status != wire.StatusSucceeded || q.P50Millis == 0 {
				continue
			}
			x := x0 + boxW*float64(si)
			mid := x + boxW/2
			what := template.HTMLEscapeString(s.Label + " " + query)
			color := template.HTMLEscapeString(s.Color)
			fmt.Fprintf(&b, `<g><title>%s: min %d, p50 %d, p95 %d, p99 %d, max %d ms over %d executions</title>`,
				what, q.MinMillis, q.P50Millis, q.P95Millis, q.P99Millis, q.MaxMillis, len(q.Millis))
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="whisker" stroke="%s" stroke-width="1.5"/>`, mid, mid, y(q.MinMillis), y(q.MaxMillis), color)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.75" class="box"/>`,
				x+boxW*0.1, y(q.P95Millis), boxW*0.8, math.Max(y(q.P50Millis)-y(q.P95Millis), 1), color)
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="p99" stroke="#222" stroke-width="2"/></g>`, x, x+boxW, y(q.P99Millis), y(q.P99Millis))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>`, x0+groupW*0.4, height-bot+16, template.HTMLEscapeString(query))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: the markup is this function's own; every text in it (labels, queries, colours) is escaped above
}

// streamsTable lists the throughput of every run, when one of them ran several query streams: the
// streams, the queries per hour and each stream's time, so that runs with 1, 2 and 4 streams read
// side by side. Empty otherwise.
func streamsTable(results []*wire.BenchResult) template.HTML {
	several := false
	for _, r := range results {
		several = several || r.Streams > 1
	}
	if !several {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<h2>Throughput under concurrent streams</h2>
<p>Each stream runs every query, in its own order, at the same time as the others; the query time distribution is over every stream's executions.</p>
<table class="streams"><tr><th>run</th><th>streams</th><th>queries per hour</th><th>each stream's time</th></tr>`)
	for _, s := range seriesOf(results) {
		r := s.Result
		if r.QueriesPerHour == 0 {
			continue
		}
		times := make([]string, len(r.StreamMillis))
		for i, v := range r.StreamMillis {
			times[i] = fmt.Sprintf("%d ms", v)
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td></tr>\n", template.HTMLEscapeString(s.Label), max(r.Streams, 1), r.QueriesPerHour, strings.Join(times, ", "))
	}
	b.WriteString("</table>")
	return template.HTML(b.String()) //nolint:gosec // G203: the markup is this function's own; the labels in it are escaped above
}
