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
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

func sampleResults() []*wire.BenchResult {
	mk := func(label string, scale int64, failed int) *wire.BenchResult {
		r := &wire.BenchResult{Label: label, Engine: "duckdb", Iterations: 3, Warmups: 1, GeometricMeanMillis: 100 * scale}
		for q := 1; q <= 22; q++ {
			qr := wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: int64(q) * 10 * scale, PeakMemoryBytes: int64(q) << 20}}
			if q == failed {
				qr = wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusOOMKilled}
				r.FailedQueries = []string{fmt.Sprintf("q%d", q)}
			}
			r.Queries = append(r.Queries, qr)
		}
		return r
	}
	return []*wire.BenchResult{mk("2cpu-4gi / volume", 1, 0), mk("2cpu-4gi / s3", 8, 9)}
}

func TestHTMLIsSelfContainedAndDrawsEveryBar(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if n := strings.Count(html, "<svg"); n != 2 {
		t.Errorf("%d charts, want 2 (time and memory)", n)
	}
	// 22 queries × 2 runs, minus the failed one, per chart.
	if n := strings.Count(html, `class="bar"`); n != 2*(44-1) {
		t.Errorf("%d bars, want %d", n, 2*43)
	}
	if n := strings.Count(html, `class="failed"`); n != 2 {
		t.Errorf("%d failure markers, want 2", n)
	}
	for _, banned := range []string{"<script", "http://", "https://", "<link"} {
		if strings.Contains(html, banned) {
			t.Errorf("the report contains %q: it must open offline, with nothing to fetch", banned)
		}
	}
	for _, want := range []string{"2cpu-4gi / volume", "2cpu-4gi / s3", "OOMKilled", "800 ms"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestChromiumDrawsTheCharts opens the report in headless Chromium (Debian's chromium package) and
// counts the bars the browser actually laid out with a non-zero size.
func TestChromiumDrawsTheCharts(t *testing.T) {
	charts, drawn := drawnInChromium(t, sampleResults())
	if charts != 2 {
		t.Errorf("%d charts laid out, want 2", charts)
	}
	if drawn != 2*43 {
		t.Errorf("%d bars drawn with a size, want %d", drawn, 2*43)
	}
	// The engine report: per configuration × input a time chart (a bar per engine and query) and a
	// memory chart (two per engine and query: anonymous, file-backed).
	charts, drawn = drawnInChromium(t, engineResults())
	if charts != 1+2*2 {
		t.Errorf("engine report: %d charts laid out, want 5", charts)
	}
	// volume: duckdb and polars, 22 queries each; s3: polars, 21 of 22 (q9 OOMKilled); and the
	// verdict's chart, a bar per engine and input it read (duckdb volume, polars volume and s3).
	if want := (2*22+21)*3 + 3; drawn != want {
		t.Errorf("engine report: %d bars drawn with a size, want %d", drawn, want)
	}
}

// TestTheVerdictOpensThePageAt1280px screenshots the first screen of the engine report in headless
// Chromium at 1280×900, as a reader's laptop shows it: the verdict and its chart are on it (the bars of
// both engines' colours, which appear nowhere else above the fold), and nothing is wider than the
// window.
func TestTheVerdictOpensThePageAt1280px(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, engineResults()); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	runChromium(t, browser, dir, "--window-size=1280,900", "--hide-scrollbars", "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w != 1280 {
		t.Fatalf("screenshot %d px wide, want 1280", w)
	}
	c := compare(engineResults())
	for _, engine := range c.Engines {
		if n := pixelsOf(img, c.engineColor(engine)); n < 5000 {
			t.Errorf("the first screen has %d pixels of %s's colour %s: its verdict bars are not on it", n, engine, c.engineColor(engine))
		}
	}
	probe := strings.Replace(b.String(), "</body>", `<script>
const v = document.getElementById("verdict").getBoundingClientRect();
document.body.setAttribute("data-verdict-top", Math.round(v.top)); document.body.setAttribute("data-verdict-bottom", Math.round(v.bottom));
document.body.setAttribute("data-overflow", document.documentElement.scrollWidth - window.innerWidth);
</script></body>`, 1)
	if err := os.WriteFile(page, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, browser, dir, "--window-size=1280,900", "--dump-dom", "file://"+page)
	if top, bottom := domNumber(t, dom, "data-verdict-top"), domNumber(t, dom, "data-verdict-bottom"); top > 120 || bottom > 900 {
		t.Errorf("the verdict spans %d–%d px: it must open the page and fit the first 900", top, bottom)
	}
	if over := domNumber(t, dom, "data-overflow"); over > 0 {
		t.Errorf("the page is %d px wider than a 1280 px window", over)
	}
}

// pixelsOf counts the pixels of img that are exactly the colour hex ("#rrggbb").
func pixelsOf(img image.Image, hex string) int {
	var want [3]uint8
	fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2])
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == want[0] && uint8(g>>8) == want[1] && uint8(b>>8) == want[2] {
				n++
			}
		}
	}
	return n
}

// drawnInChromium renders the HTML report of results in headless Chromium and returns how many
// charts and bars it laid out with a size.
func drawnInChromium(t *testing.T, results []*wire.BenchResult) (charts, bars int) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, results); err != nil {
		t.Fatal(err)
	}
	// The test's own measuring script goes into a copy; the report itself has none.
	probe := strings.Replace(b.String(), "</body>", `<script>
const drawn = [...document.querySelectorAll("svg rect.bar")].filter(r => { const bb = r.getBBox(); return bb.width > 0 && bb.height > 0; }).length;
const charts = [...document.querySelectorAll("svg.chart")].filter(s => s.getBoundingClientRect().width > 100 && s.getBoundingClientRect().height > 100).length;
document.body.setAttribute("data-drawn", drawn); document.body.setAttribute("data-charts", charts);
</script></body>`, 1)
	page := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(page, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runChromium(t, browser, dir, "--dump-dom", "file://"+page)
	return domNumber(t, out, "data-charts"), domNumber(t, out, "data-drawn")
}

// runChromium runs headless Chromium with a profile under dir, offline, and returns its stdout.
func runChromium(t *testing.T, browser, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, "profile")}
	out, err := exec.CommandContext(ctx, browser, append(base, args...)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return out
}

// domNumber reads the integer attribute name that a probe script set on the page's body.
func domNumber(t *testing.T, dom []byte, name string) int {
	t.Helper()
	m := regexp.MustCompile(name + `="(-?\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("chromium's DOM has no %s:\n%.2000s", name, dom)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func TestHTMLEscapesWhatTheResultsSay(t *testing.T) {
	// Results files and BenchRun status are input: a label or status must never become markup.
	hostile := &wire.BenchResult{Label: `<script>alert("label")</script>`, Engine: "duckdb", Queries: []wire.QueryResult{
		{Name: "q1", Status: `<img src=x onerror=alert(1)>`},
		{Name: "q2", Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: 10}},
	}}
	var b bytes.Buffer
	if err := WriteHTML(&b, []*wire.BenchResult{hostile}); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"<script>", "<img"} {
		if strings.Contains(b.String(), raw) {
			t.Errorf("the page contains %q unescaped", raw)
		}
	}
	if !strings.Contains(b.String(), "&lt;img src=x") {
		t.Error("the status is missing from the page")
	}

	// The engine report draws engine, configuration and input names too.
	other := &wire.BenchResult{Label: "x", Engine: `<i>engine</i>`, Config: `<b>cfg</b>`, Input: `<u>in|put</u>`, NetworkReadBytes: 5 << 20, Queries: []wire.QueryResult{
		{Name: "q1", Status: `<img src=y onerror=alert(2)>`},
		{Name: "q2", Status: wire.StatusSucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: 12, NetworkReadBytes: 1 << 20}},
	}}
	hostile.Input = `<script>input()</script>`
	b.Reset()
	if err := WriteHTML(&b, []*wire.BenchResult{hostile, other}); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"<script", "<img", "<i>", "<b>", "<u>"} {
		if strings.Contains(b.String(), raw) {
			t.Errorf("the engine report contains %q unescaped", raw)
		}
	}
	for _, want := range []string{"&lt;i&gt;engine&lt;/i&gt; median", "&lt;img src=y", "&lt;b&gt;cfg&lt;/b&gt; / &lt;u&gt;in|put&lt;/u&gt;"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the engine report lacks %q", want)
		}
	}
}

// noisyResults are polars on three inputs, three iterations each (volume and mixed-staged within
// each other's range, s3 clear of both), and duckdb on two inputs, one iteration each, 6% apart.
func noisyResults() []*wire.BenchResult {
	mk := func(engine, input string, iterations int, med, lo, hi int64) *wire.BenchResult {
		r := &wire.BenchResult{Label: engine + " / " + input, Engine: engine, Config: "2cpu-4gi", Input: input, Iterations: iterations}
		for q := 1; q <= 4; q++ {
			qm := wire.QueryMeasurements{MedianMillis: med, MinMillis: lo, MaxMillis: hi}
			if iterations > 1 {
				spread := (med - lo) * 1000 / med
				qm.SpreadPermille = &spread
			}
			r.Queries = append(r.Queries, wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusSucceeded, QueryMeasurements: qm})
		}
		return r
	}
	return []*wire.BenchResult{
		mk("polars", "volume", 3, 106, 100, 118), mk("polars", "mixed-staged", 3, 100, 95, 110), mk("polars", "s3", 3, 310, 300, 330),
		mk("duckdb", "volume", 1, 106, 106, 106), mk("duckdb", "mixed-staged", 1, 100, 100, 100),
	}
}

// TestChromiumShowsTheVerdictsSpreadAndNoise opens an engine report in headless Chromium: the
// verdict, as the browser lays it out on the first screen, says "within noise" for both engines'
// close inputs rather than naming a winner, names s3's loss, gives polars's ranges, says duckdb's
// spread is unknown, and draws a whisker over each polars bar of its chart.
func TestChromiumShowsTheVerdictsSpreadAndNoise(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, noisyResults()); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"data-polars-tie":   `/polars: mixed-staged is 3\.1x faster than s3 and within noise of volume \(1\.06x\)/`,
		"data-polars-range": `/mixed-staged 100 ms \(95–110 ms\), volume 106 ms \(100–118 ms\), s3 310 ms \(300–330 ms\)/`,
		"data-duckdb-tie":   `/duckdb: mixed-staged and volume are within noise \(1\.06x\)/`,
		"data-duckdb-note":  `/mixed-staged 100 ms, volume 106 ms; spread unknown \(one iteration\)/`,
		"data-no-winner":    `/duckdb: mixed-staged is/`,
	}
	var script strings.Builder
	script.WriteString(`<script>
const v = document.getElementById("verdict"); const text = v.innerText; const box = v.getBoundingClientRect();
document.body.setAttribute("data-verdict-bottom", Math.round(box.bottom));
document.body.setAttribute("data-whiskers", [...v.querySelectorAll("g.range line")].filter(l => l.getBBox().height > 0).length);
`)
	for attr, re := range checks {
		fmt.Fprintf(&script, "document.body.setAttribute(%q, %s.test(text) ? 1 : 0);\n", attr, re)
	}
	script.WriteString("</script></body>")
	page := filepath.Join(dir, "noise.html")
	if err := os.WriteFile(page, []byte(strings.Replace(b.String(), "</body>", script.String(), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, browser, dir, "--window-size=1280,900", "--dump-dom", "file://"+page)
	for attr, re := range checks {
		want := 1
		if attr == "data-no-winner" {
			want = 0
		}
		if got := domNumber(t, dom, attr); got != want {
			t.Errorf("the verdict as laid out matches %s %d times, want %d:\n%.3000s", re, got, want, dom)
		}
	}
	if bottom := domNumber(t, dom, "data-verdict-bottom"); bottom > 900 {
		t.Errorf("the verdict ends at %d px, below the first 900", bottom)
	}
	// polars's three bars each have a range; duckdb's, of one iteration, none. Only the vertical line
	// of a whisker has a height.
	if n := domNumber(t, dom, "data-whiskers"); n != 3 {
		t.Errorf("%d range whiskers drawn in the verdict's chart, want 3 (polars on each input)", n)
	}
}
