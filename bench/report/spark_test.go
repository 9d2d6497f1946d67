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

// The report shows what a Spark run's driver and executors used (issue 50: status held it, the page
// did not), on both pages, and Chromium lays the table out with every figure in it.
func TestTheReportShowsSparkUsage(t *testing.T) {
	spark := engineResults()[0]
	cp := *spark
	cp.Engine, cp.Label, cp.CgroupPeakBytes = "spark", "spark / 1cpu / volume", 900<<20
	cp.Spark = &wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{1200 << 20}, S3ReadBytes: 75 << 20, ExecutorMillis: 42_000, CoreSeconds: 63, GiBSeconds: 96}
	for _, results := range [][]*wire.BenchResult{{&cp}, append(engineResults(), &cp)} {
		var b bytes.Buffer
		if err := WriteHTML(&b, results); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		for _, want := range []string{"Spark: driver and executors", "<td>3</td>", "900.0 MiB", "1.17 GiB", "75.0 MiB", "42s", "<td>63</td>", "<td>96</td>"} {
			if !strings.Contains(page, want) {
				t.Errorf("the page (%d results) lacks %q", len(results), want)
			}
		}
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: apt-get install chromium (.ci/run installs it)")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, []*wire.BenchResult{&cp}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, browser, dir, "--dump-dom", "file://"+filepath.Join(dir, "report.html")))
	if !strings.Contains(dom, "Spark: driver and executors") || !strings.Contains(dom, "1.17 GiB") {
		t.Error("Chromium's page has no Spark table")
	}
}
