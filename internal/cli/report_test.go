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

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A BenchRun as `kubectl get benchrun -o yaml` prints it.
const benchRunYAML = `apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: compare, namespace: demo}
spec:
  datasetRef: {name: tpch}
  configs: [{name: small, cpu: "1", memory: 1Gi}]
  iterations: 2
  warmups: 1
status:
  progress: 2/2 jobs
  results:
  - engine: duckdb
    config: small
    input: volume
    completionTime: "2026-12-02T10:00:00Z"
    wallMillis: 900
    geometricMeanMillis: 40
    queries:
    - {name: q1, status: Succeeded, medianMillis: 41, peakMemoryBytes: 52428800, digest: abc-4, rows: 4}
    - {name: q18, status: OOMKilled}
    failedQueries: [q18]
  - engine: polars
    config: small
    input: mixed-staged
    completionTime: "2026-12-02T10:00:01Z"
    wallMillis: 1200
    queries:
    - {name: q1, status: Succeeded, medianMillis: 45, peakMemoryBytes: 62914560, digest: abc-4, rows: 4}
    - {name: q18, status: Succeeded, medianMillis: 80, peakMemoryBytes: 99614720, digest: def-57, rows: 57}
  - engine: polars
    config: small
    input: volume
    startTime: "2026-12-02T10:00:02Z"
`

func TestReportReadsABenchRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "br.yaml")
	if err := os.WriteFile(in, []byte(benchRunYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "report", in, "--format", "markdown")
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, want := range []string{"compare: duckdb / small / volume", "compare: polars / small / mixed-staged", "41 ms", "OOMKilled"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "compare: polars / small / volume") {
		t.Error("a Job still running is in the report")
	}
	html := filepath.Join(dir, "report.html")
	if out, err := run(t, "report", in, "-o", html); err != nil {
		t.Fatalf("report html: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(html); !strings.Contains(string(data), "<svg") {
		t.Error("the HTML report has no chart")
	}

	// Without results, and something else entirely, are clear errors.
	empty := filepath.Join(dir, "empty.yaml")
	_ = os.WriteFile(empty, []byte("kind: BenchRun\nmetadata: {name: pending}\nspec: {datasetRef: {name: x}}\n"), 0o644)
	if _, err := run(t, "report", empty); err == nil || !strings.Contains(err.Error(), "BenchRun pending has no results yet") {
		t.Errorf("empty BenchRun: %v", err)
	}
	cm := filepath.Join(dir, "cm.yaml")
	_ = os.WriteFile(cm, []byte("kind: ConfigMap\nmetadata: {name: x}\n"), 0o644)
	if _, err := run(t, "report", cm); err == nil || !strings.Contains(err.Error(), "a ConfigMap is neither") {
		t.Errorf("ConfigMap: %v", err)
	}
}

// A BenchRun over engines duckdb and polars and inputs volume and s3, as the e2e suite runs one.
const engineBenchRunYAML = `apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: engines, namespace: demo}
spec:
  datasetRef: {name: tpch}
  iterations: 3
  pricing: {currency: EUR}
status:
  results:
  - {engine: duckdb, config: small, input: volume, completionTime: "2026-12-02T10:00:00Z", wallMillis: 900, readBytesPerSecond: 2420000000,
     queries: [{name: q1, status: Succeeded, medianMillis: 40, minMillis: 38, maxMillis: 45, spreadPermille: 50, peakMemoryBytes: 52428800, peakAnonBytes: 41943040, peakFileBytes: 10485760},
               {name: q6, status: Succeeded, medianMillis: 10, minMillis: 9, maxMillis: 12, spreadPermille: 100, peakMemoryBytes: 20971520, peakAnonBytes: 10485760, peakFileBytes: 10485760}]}
  - {engine: polars, config: small, input: volume, completionTime: "2026-12-02T10:00:01Z", wallMillis: 800, costMicros: 2100, breakEvenRuns: 7,
     queries: [{name: q1, status: Succeeded, medianMillis: 30, minMillis: 28, maxMillis: 33, spreadPermille: 33, peakMemoryBytes: 104857600, peakAnonBytes: 31457280, peakFileBytes: 73400320},
               {name: q6, status: Succeeded, medianMillis: 12, minMillis: 11, maxMillis: 14, spreadPermille: 83, peakMemoryBytes: 62914560, peakAnonBytes: 10485760, peakFileBytes: 52428800}]}
  - {engine: polars, config: small, input: s3, completionTime: "2026-12-02T10:00:02Z", wallMillis: 4000, networkReadBytes: 125829120, costMicros: 13500,
     queries: [{name: q1, status: Succeeded, medianMillis: 120, minMillis: 110, maxMillis: 140, spreadPermille: 83, peakMemoryBytes: 104857600, peakAnonBytes: 94371840, networkReadBytes: 31457280},
               {name: q6, status: Succeeded, medianMillis: 48, minMillis: 45, maxMillis: 60, spreadPermille: 63, peakMemoryBytes: 62914560, peakAnonBytes: 52428800, networkReadBytes: 20971520}]}
`

// TestReportComparesEngines: `pqcache report` on a BenchRun of two engines opens with the verdict
// (which input path won for polars, what a run costs in the BenchRun's currency, the break-even) and
// puts the engines side by side per configuration × input.
func TestReportComparesEngines(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "benchrun.yaml")
	if err := os.WriteFile(in, []byte(engineBenchRunYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := run(t, "report", in, "--format", "markdown")
	if err != nil {
		t.Fatalf("report: %v\n%s", err, md)
	}
	for _, want := range []string{
		"### small / volume\n",
		"| q | duckdb median | polars median | duckdb peak (anon/file) | polars peak (anon/file) |\n",
		"| q1 | 40 ms ±5.0% | 30 ms ±3.3% | 40 / 10 MiB | 30 / 70 MiB |\n",
		// From the status, through the report: each median's spread, each mean's range.
		"- **polars**: volume is 4.0x faster than s3; geometric means over 2 queries: volume 19 ms (18–21 ms), s3 76 ms (70–92 ms). One run costs €0.0021 on volume and €0.013 on s3. The cache pays for itself after 7 runs.\n",
		"| small / s3 | – | 120.0 MiB |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	html := filepath.Join(dir, "report.html")
	if out, err := run(t, "report", in, "-o", html); err != nil {
		t.Fatalf("report html: %v\n%s", err, out)
	}
	page, _ := os.ReadFile(html)
	for _, want := range []string{"<th>duckdb median</th><th>polars median</th>", "<strong>polars</strong>: volume is 4.0x faster than s3", "2.25 GiB/s"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
}
