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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// timedResults are three runs over one configuration × input, each timed another way: DuckDB in
// its own time per query process (start-up 300 ms, wall 400 ms beside query times of 10–50 ms),
// DuckDB in a session (start-up once, 250 ms), and a command engine that reports nothing (its
// query times are its wall times).
func timedResults() []*wire.BenchResult {
	mk := func(engine, isolation, timing string) *wire.BenchResult {
		r := &wire.BenchResult{Label: "run: " + engine, Engine: engine, Config: "2cpu-4gi", Input: "volume", Iterations: 3, Warmups: 1,
			Isolation: isolation, GeometricMeanMillis: 25, WallGeometricMeanMillis: 412}
		for q := 1; q <= 5; q++ {
			qr := wire.QueryResult{Name: fmt.Sprintf("q%d", q), Status: wire.StatusSucceeded, Timing: timing,
				MedianWallMillis:  400 + int64(q),
				QueryMeasurements: wire.QueryMeasurements{MedianMillis: int64(q) * 10, PeakMemoryBytes: 1 << 20}}
			if isolation == wire.IsolationProcess && timing == wire.TimingEngine {
				qr.MedianStartupMillis = 300 + int64(q)
			}
			r.Queries = append(r.Queries, qr)
		}
		if isolation == wire.IsolationSession {
			r.SessionStartupMillis = []int64{240, 250, 260}
		}
		return r
	}
	return []*wire.BenchResult{mk("duckdb", wire.IsolationProcess, wire.TimingEngine), mk("duckdb-session", wire.IsolationSession, wire.TimingEngine),
		mk("cmd", "", wire.TimingWall)}
}

func TestReportLabelsHowEachResultWasTimed(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, timedResults()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		"Query times: duckdb engine time, process isolation; duckdb-session engine time, session isolation; cmd wall time, start-up included, process isolation.",
		"<th>duckdb start-up</th><th>duckdb wall</th><th>duckdb-session start-up</th>",
		"<td>10 ms</td><td>10 ms</td><td>10 ms</td><td>301 ms</td><td>401 ms</td><td>session 250 ms</td><td>401 ms</td><td>–</td><td>401 ms</td>",
		"<th>geometric mean, whole process</th>", "<td>engine time</td><td>session</td><td>412 ms</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the engine report lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteMarkdown(&b, timedResults()); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); !strings.Contains(md, "cmd wall time, start-up included, process isolation.") || !strings.Contains(md, "| duckdb start-up | duckdb wall |") {
		t.Errorf("the Markdown report does not say how each run was timed:\n%s", md)
	}

	// One run alone: the runs page has the same figures.
	b.Reset()
	if err := WriteHTML(&b, timedResults()[:1]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>engine time, process isolation</td><td>412 ms</td>", "<th>start-up</th><th>wall</th>", "<td>10 ms</td><td>301 ms</td><td>401 ms</td>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the one-run report lacks %q", want)
		}
	}
}

// TestChromiumShowsStartupAndWallColumns lays the engine report out in headless Chromium and
// counts the start-up and wall columns and the timing line it shows with a size.
func TestChromiumShowsStartupAndWallColumns(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, timedResults()); err != nil {
		t.Fatal(err)
	}
	probe := strings.Replace(b.String(), "</body>", `<script>
const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
const columns = [...document.querySelectorAll("th")].filter(th => shown(th) && / (start-up|wall)$/.test(th.textContent)).length;
const timed = [...document.querySelectorAll("p.timed")].filter(p => shown(p) && p.textContent.includes("wall time, start-up included")).length;
document.body.setAttribute("data-columns", columns); document.body.setAttribute("data-timed", timed);
</script></body>`, 1)
	page := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(page, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, browser, dir, "--dump-dom", "file://"+page)
	if n := domNumber(t, dom, "data-columns"); n != 3*2 {
		t.Errorf("%d start-up and wall columns shown, want 6 (two per engine)", n)
	}
	if n := domNumber(t, dom, "data-timed"); n != 1 {
		t.Errorf("%d timing lines shown with the command engine's wall time, want 1", n)
	}
}
