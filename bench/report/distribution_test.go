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
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// withPercentiles gives every successful query of results a distribution around its median, as a
// run with streams reports it, and the runs 1, 2, 4... streams with their throughput.
func withPercentiles(results []*wire.BenchResult) []*wire.BenchResult {
	for i, r := range results {
		r.Streams = 1 << i
		r.QueriesPerHour = int64(30000 / (i + 1))
		for s := range r.Streams {
			r.StreamMillis = append(r.StreamMillis, int64(4000+100*s))
		}
		for k := range r.Queries {
			q := &r.Queries[k]
			if q.Status != wire.StatusSucceeded {
				continue
			}
			m := q.MedianMillis
			q.Millis = make([]int64, 3*r.Streams)
			q.MinMillis, q.P50Millis, q.P95Millis, q.P99Millis, q.MaxMillis = m*8/10, m, m*15/10, m*17/10, m*18/10
		}
	}
	return results
}

// TestChromiumDrawsTheLatencyDistribution opens both reports of runs with percentiles in headless
// Chromium and counts the distribution charts and their boxes laid out with a size; the throughput
// of the streams is in the page.
func TestChromiumDrawsTheLatencyDistribution(t *testing.T) {
	for _, c := range []struct {
		name            string
		results         []*wire.BenchResult
		charts, boxes   int
		streams, labels []string
	}{
		// Two runs side by side: one chart, a box per run and query but the failed one.
		{name: "runs", results: withPercentiles(sampleResults()), charts: 1, boxes: 2*22 - 1, streams: []string{"30000", "15000", "4000 ms, 4100 ms"}},
		// The engine report: per configuration × input (volume: duckdb and polars; s3: polars, q9 failed).
		{name: "engines", results: withPercentiles(engineResults()), charts: 2, boxes: 2*22 + 21, streams: []string{"10000", "4000 ms, 4100 ms, 4200 ms, 4300 ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteHTML(&b, c.results); err != nil {
				t.Fatal(err)
			}
			for _, want := range append(c.streams, "Throughput under concurrent streams", "box p50–p95") {
				if !strings.Contains(b.String(), want) {
					t.Errorf("the report lacks %q", want)
				}
			}
			charts, boxes := distributionInChromium(t, b.String())
			if charts != c.charts || boxes != c.boxes {
				t.Errorf("%d distribution charts with %d boxes laid out, want %d with %d", charts, boxes, c.charts, c.boxes)
			}
		})
	}
	// Results without percentiles (made before them) get no distribution chart and no streams table.
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "distribution") || strings.Contains(b.String(), "concurrent streams") {
		t.Error("a report of results without percentiles draws a distribution")
	}
}

// distributionInChromium renders html in headless Chromium and returns how many distribution charts
// and boxes it laid out with a size.
func distributionInChromium(t *testing.T, html string) (charts, boxes int) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	probe := strings.Replace(html, "</body>", `<script>
const boxes = [...document.querySelectorAll("svg.distribution rect.box")].filter(r => { const bb = r.getBBox(); return bb.width > 0 && bb.height > 0; }).length;
const charts = [...document.querySelectorAll("svg.distribution")].filter(s => s.getBoundingClientRect().width > 100 && s.getBoundingClientRect().height > 100).length;
document.body.setAttribute("data-boxes", boxes); document.body.setAttribute("data-dist-charts", charts);
</script></body>`, 1)
	page := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(page, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runChromium(t, browser, dir, "--dump-dom", "file://"+page)
	return domNumber(t, out, "data-dist-charts"), domNumber(t, out, "data-boxes")
}
