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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/api/wire"
)

// engineResults are a BenchRun's results over two engines: duckdb and polars on the volume, polars
// also straight from S3 (3.1x slower per query, q9 OOMKilled there), on one configuration.
func engineResults() []*wire.BenchResult {
	mk := func(engine, input string, msPerQuery int64, failed int, network int64) *wire.BenchResult {
		r := &wire.BenchResult{Label: "run: " + engine + " / 2cpu-4gi / " + input, Engine: engine, Config: "2cpu-4gi", Input: input,
			Iterations: 3, Warmups: 1, NetworkReadBytes: network}
		for q := 1; q <= 22; q++ {
			// Three iterations: 5% under the median and 10% over it.
			med := int64(q) * msPerQuery
			qr := wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: med,
				MinMillis: med - med/20, MaxMillis: med + med/10, SpreadPermille: ptr(50),
				PeakMemoryBytes: int64(q) << 21, PeakAnonBytes: int64(q) << 20, PeakFileBytes: int64(q) << 20}}
			if engine == "polars" {
				qr.PeakFileBytes = int64(q) << 22 // Polars maps the Parquet files it reads
			}
			if network > 0 {
				qr.NetworkReadBytes = network / 88
			}
			if q == failed {
				qr = wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusOOMKilled}
				r.FailedQueries = []string{fmt.Sprintf("q%d", q)}
			}
			r.Queries = append(r.Queries, qr)
		}
		return r
	}
	polarsVolume, polarsS3 := mk("polars", "volume", 20, 0, 0), mk("polars", "s3", 62, 9, 3<<30)
	// Priced as a BenchRun prices them: the volume run is cheaper and pays for itself after 14 runs.
	polarsVolume.CostMicros, polarsVolume.Currency, polarsVolume.BreakEvenRuns = ptr(1_234), "USD", ptr(14)
	polarsS3.CostMicros, polarsS3.Currency = ptr(45_600), "USD"
	return []*wire.BenchResult{mk("duckdb", "volume", 10, 0, 0), polarsVolume, polarsS3}
}

func ptr(v int64) *int64 { return &v }

func TestCompareGroupsByConfigAndInput(t *testing.T) {
	c := compare(engineResults())
	if d := cmp.Diff([]string{"duckdb", "polars"}, c.Engines); d != "" {
		t.Errorf("engines (-want +got):\n%s", d)
	}
	var titles []string
	for _, g := range c.Groups {
		titles = append(titles, g.Title())
	}
	if d := cmp.Diff([]string{"2cpu-4gi / volume", "2cpu-4gi / s3"}, titles); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	hs := c.headlines()
	if len(hs) != 2 || hs[0].Engine != "duckdb" || len(hs[0].Verdict.Means) != 1 || hs[1].Engine != "polars" {
		t.Fatalf("headlines: %+v", hs)
	}
	v := hs[1].Verdict
	if v.Queries != 21 || v.Means[0].Name != "volume" {
		t.Fatalf("polars's verdict: %+v", v)
	}
	if ratio := v.Means[1].Millis / v.Means[0].Millis; ratio < 3.0999 || ratio > 3.1001 {
		t.Errorf("s3/volume ratio %.4f, want 3.1 (per query 62 vs 20 ms)", ratio)
	}
	// A standalone run names no input: its data is the input; two runs of one engine over the same
	// group both stay, the second by its label.
	a := &wire.BenchResult{Engine: "polars", Data: "/data/tpch", Label: "in-memory", Queries: []wire.QueryResult{{Name: "q1", Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: 5}}}}
	b := &wire.BenchResult{Engine: "polars", Data: "/data/tpch", Label: "streaming", Queries: a.Queries}
	d := &wire.BenchResult{Engine: "duckdb", Data: "/data/tpch", Queries: a.Queries}
	c = compare([]*wire.BenchResult{a, b, d})
	if len(c.Groups) != 1 || c.Groups[0].Title() != "/data/tpch" {
		t.Fatalf("standalone groups: %+v", c.Groups)
	}
	if diff := cmp.Diff([]string{"polars", "polars (streaming)", "duckdb"}, c.Engines); diff != "" {
		t.Errorf("standalone engines (-want +got):\n%s", diff)
	}
}

func TestVerdictSentences(t *testing.T) {
	// run is one input's query: its median, and its fastest and slowest of three iterations when
	// lo > 0 (else it ran one iteration).
	type run struct {
		input       string
		med, lo, hi int64
	}
	const unknown = "; spread unknown (one iteration): differences under 10.0% count as noise."
	for _, tc := range []struct {
		name string
		runs []run
		want string
	}{
		{"one iteration, far apart", []run{{"volume", 100, 0, 0}, {"s3", 310, 0, 0}},
			"For polars, volume is 3.1x faster than s3; geometric means over 1 query: volume 100 ms, s3 310 ms" + unknown},
		{"one iteration, one winner and one within the assumed noise", []run{{"volume", 300, 0, 0}, {"s3", 100, 0, 0}, {"mixed-staged", 102, 0, 0}},
			"For polars, s3 is 3.0x faster than volume and within noise of mixed-staged (1.02x); geometric means over 1 query: s3 100 ms, mixed-staged 102 ms, volume 300 ms" + unknown},
		// The demo's verdict, which used to read "mixed-staged is 1.1x faster than volume".
		{"one iteration, 6% apart", []run{{"volume", 106, 0, 0}, {"mixed-staged", 100, 0, 0}},
			"For polars, mixed-staged and volume are within noise (1.06x); geometric means over 1 query: mixed-staged 100 ms, volume 106 ms" + unknown},
		{"ranges overlap", []run{{"volume", 106, 100, 118}, {"mixed-staged", 100, 95, 110}},
			"For polars, mixed-staged and volume are within noise (1.06x); geometric means over 1 query: mixed-staged 100 ms (95–110 ms), volume 106 ms (100–118 ms)."},
		{"ranges apart though close", []run{{"volume", 106, 104, 108}, {"s3", 100, 99, 102}},
			"For polars, s3 is 1.1x faster than volume; geometric means over 1 query: s3 100 ms (99–102 ms), volume 106 ms (104–108 ms)."},
		{"a range known beside an unknown one", []run{{"volume", 140, 0, 0}, {"s3", 100, 60, 150}},
			"For polars, s3 is 1.4x faster than volume; geometric means over 1 query: s3 100 ms (60–150 ms), volume 140 ms" + unknown},
	} {
		var names []string
		byName := map[string]*wire.BenchResult{}
		for _, r := range tc.runs {
			res := &wire.BenchResult{Iterations: 1, Queries: []wire.QueryResult{{Name: "q1", Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: r.med, MinMillis: r.med, MaxMillis: r.med}}}}
			if r.lo > 0 {
				res.Iterations = 3
				res.Queries[0].MinMillis, res.Queries[0].MaxMillis = r.lo, r.hi
			}
			names, byName[r.input] = append(names, r.input), res
		}
		if got := judge("For polars", names, byName).Sentence(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	failed := map[string]*wire.BenchResult{"volume": {Queries: []wire.QueryResult{{Name: "q1", Status: wire.StatusFailed}}}, "s3": {}}
	if got := judge("For polars", []string{"volume", "s3"}, failed).Sentence(); !strings.Contains(got, "nothing to compare") {
		t.Errorf("verdict without a common query: %s", got)
	}
}

// TestEngineReportMarkdownAndHTML: both formats put the engines side by side per configuration ×
// input (median, anonymous / file-backed peak, network bytes where measured), and say which input
// won for each engine and by how much.
func TestEngineReportMarkdownAndHTML(t *testing.T) {
	var md bytes.Buffer
	if err := WriteMarkdown(&md, engineResults()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### 2cpu-4gi / volume\n",
		"| q | duckdb median | polars median | duckdb peak (anon/file) | polars peak (anon/file) |\n",
		"| q1 | 10 ms ±5.0% | 20 ms ±5.0% | 1 / 1 MiB | 1 / 4 MiB |\n",
		"On 2cpu-4gi / volume, duckdb is 2.0x faster than polars; geometric means over 22 queries: duckdb 91 ms (86–100 ms), polars 181 ms (172–199 ms).",
		"### 2cpu-4gi / s3\n",
		"| q | polars median | polars peak (anon/file) | polars network read |\n",
		"| q9 | OOMKilled | OOMKilled | – |\n",
		"| q10 | 620 ms ±5.0% | 10 / 40 MiB | 34.9 MiB |\n",
		"## Verdict\n\n- **duckdb**: read volume only; geometric mean over 22 queries: volume 91 ms (86–100 ms).\n",
		"- **polars**: volume is 3.1x faster than s3; geometric means over 21 queries: volume 181 ms (172–199 ms), s3 562 ms (534–617 ms). One run costs $0.0012 on volume and $0.046 on s3. The cache pays for itself after 14 runs.\n",
		"### Network bytes read\n\n| configuration / input | duckdb | polars |\n|---|---|---|\n| 2cpu-4gi / volume | – | – |\n| 2cpu-4gi / s3 | – | 3.00 GiB |\n",
		"## Runs\n\n### run: duckdb / 2cpu-4gi / volume\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md.String())
		}
	}

	var html bytes.Buffer
	if err := WriteHTML(&html, engineResults()); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		"<th>q</th><th>duckdb median</th><th>polars median</th><th>duckdb peak (anon/file)</th><th>polars peak (anon/file)</th></tr>",
		"<td>q1</td><td>10 ms ±5.0%</td><td>20 ms ±5.0%</td><td>1 / 1 MiB</td><td>1 / 4 MiB</td>",
		`<section id="verdict"><h2>Verdict</h2>`,
		"<strong>polars</strong>: volume is 3.1x faster than s3; geometric means over 21 queries: volume 181 ms (172–199 ms), s3 562 ms (534–617 ms). One run costs $0.0012 on volume and $0.046 on s3. The cache pays for itself after 14 runs.",
		"polars s3: 562 ms", // the verdict's chart
		"<h2>Network bytes read</h2>",
		"<td>3.00 GiB</td>",
		"polars file-backed q3: 12 MiB",
		"<td>run: polars / 2cpu-4gi / s3</td><td>polars</td><td>0 ms</td><td>±5.0%</td>", // the runs table: the typical spread
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg"); n != 5 {
		t.Errorf("%d charts, want 5 (the verdict's, time and memory per configuration × input)", n)
	}
	if strings.Index(page, "<h2>Verdict</h2>") > strings.Index(page, "<svg") {
		t.Error("the page does not open with the verdict")
	}
	for _, banned := range []string{"<script", "http://", "https://", "<link"} {
		if strings.Contains(page, banned) {
			t.Errorf("the report contains %q: it must open offline, with nothing to fetch", banned)
		}
	}

	// One engine on one input: the report stays the per-run one.
	var single bytes.Buffer
	if err := WriteMarkdown(&single, engineResults()[1:2]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(single.String(), "Engines side by side") || !strings.HasPrefix(single.String(), "### run: polars / 2cpu-4gi / volume") {
		t.Errorf("a single-engine report changed:\n%.300s", single.String())
	}
}
