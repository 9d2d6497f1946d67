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

package bench

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

func sampleResult() *wire.BenchResult {
	return &wire.BenchResult{Engine: "duckdb", Iterations: 2, Warmups: 1, WallMillis: 2500, GeometricMeanMillis: 141, FailedQueries: []string{"q9"},
		Queries: []wire.QueryResult{
			{Name: "q1", Status: wire.StatusSucceeded, Millis: []int64{200, 100}, StartupMillis: []int64{300, 310}, WallMillis: []int64{520, 430}, Timing: wire.TimingEngine, PeakAboveReadyBytes: 50 << 20, QueryMeasurements: wire.QueryMeasurements{MedianMillis: 150, MinMillis: 100, MaxMillis: 200, PeakMemoryBytes: 64 << 20, PeakAnonBytes: 60 << 20, PeakFileBytes: 4 << 20, Rows: 4}},
			{Name: "q9", Status: wire.StatusOOMKilled, QueryMeasurements: wire.QueryMeasurements{PeakMemoryBytes: 2 << 30}},
		}}
}

func TestWriteCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, sampleResult(), CSVOptions{Version: "1.5.6", IOType: "volume", ScaleFactor: "1"}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"solution", "version", "query_number", "duration[s]", "io_type", "scale_factor", "peak_memory_bytes", "peak_anon_bytes", "peak_file_bytes", "status",
			"startup[s]", "wall[s]", "timing", "isolation", "peak_above_ready_bytes"},
		{"duckdb", "1.5.6", "1", "0.200", "volume", "1", "67108864", "62914560", "4194304", "Succeeded", "0.300", "0.520", "engine", "process", "52428800"},
		{"duckdb", "1.5.6", "1", "0.100", "volume", "1", "67108864", "62914560", "4194304", "Succeeded", "0.310", "0.430", "engine", "process", "52428800"},
		{"duckdb", "1.5.6", "9", "", "volume", "1", "2147483648", "0", "0", "OOMKilled", "", "", "", "process", "0"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("csv:\n%v\nwant\n%v", rows, want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| q1 | Succeeded | 150 ms | 100 ms | 200 ms | 64 MiB | 60 MiB | 4 MiB | 4 |", "| q9 | OOMKilled |", "Geometric mean of medians: 141 ms; 1 of 2 queries failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Network read") {
		t.Error("a run without network bytes reports some")
	}
	r := sampleResult()
	r.NetworkReadBytes = 3 << 20
	b.Reset()
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Network read: 3 MiB over the whole run.") {
		t.Errorf("markdown lacks the network bytes:\n%s", b.String())
	}
}
