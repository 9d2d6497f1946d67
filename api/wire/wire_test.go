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

package wire

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTruncateKeepsUTF8Whole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg..."},
		{"ééééé", 6, "é..."},   // 10 bytes; a cut at byte 3 would split the second é
		{"日本語テキスト", 8, "日..."}, // 3-byte runes
		{"abc", 2, "ab"},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q (valid UTF-8, at most %d bytes)", tc.in, tc.n, got, tc.want, tc.n)
		}
	}
}

func TestCompactFitsATerminationMessage(t *testing.T) {
	r := &SyncReport{Result: ResultFailed, Reason: ReasonHostileKeys, Message: strings.Repeat("m", 1000), FilesCopied: 7, FilesFailed: 500}
	for i := range 20 {
		r.Failed = append(r.Failed, FileError{Key: fmt.Sprintf("very/long/key/%0200d", i), Error: strings.Repeat("e", 200)})
	}
	r.Layout.Advice = []string{strings.Repeat("a", 300), strings.Repeat("b", 300)}
	data, err := r.Compact(TerminationMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > TerminationMessageLimit {
		t.Fatalf("compact report is %d bytes", len(data))
	}
	var back SyncReport
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.FilesCopied != 7 || back.FilesFailed != 500 || back.Reason != ReasonHostileKeys || len(back.Failed) == 0 {
		t.Fatalf("compact report lost what matters: %+v", back)
	}
	if len(r.Failed) != 20 {
		t.Fatal("Compact changed the report it was given")
	}
}

func TestSummaryFitsATerminationMessage(t *testing.T) {
	res := &BenchResult{Label: "12cpu-48gi / mixed-staged", Engine: "duckdb", Iterations: 100, Warmups: 10}
	for q := 1; q <= 22; q++ {
		res.Queries = append(res.Queries, QueryResult{
			Name: fmt.Sprintf("query-with-a-name-of-some-length-%02d", q), Status: StatusFailed, Millis: make([]int64, 100),
			MemorySource: "rusage",
			ExitCode:     1, StderrTail: strings.Repeat("Binder Error: x ", 200), QueryMeasurements: QueryMeasurements{MedianMillis: 123456, MinMillis: 100000, MaxMillis: 999999,
				PeakMemoryBytes: 12345678901, PeakAnonBytes: 1234567890, PeakFileBytes: 1234567890,
				Rows: 1000000, Digest: "0123456789abcdef-1000000", P50Millis: 123456, P95Millis: 987654, P99Millis: 999999},
		})
	}
	// 16 streams, the most a run has.
	res.Streams, res.QueriesPerHour = MaxStreams, 123456789
	for s := range MaxStreams {
		res.StreamMillis = append(res.StreamMillis, 12345678+int64(s)*1013)
	}
	res.Probe = &ProbeResult{Files: 1000, Bytes: 1 << 40, Streams: 8, Millis: 100000, BytesPerSecond: 1 << 30}
	enc, err := EncodeBenchSummary(res, TerminationMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > TerminationMessageLimit {
		t.Fatalf("summary is %d bytes", len(enc))
	}
	back, err := DecodeBenchSummary(string(enc))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Queries) != 22 || back.Queries[21].Digest != res.Queries[21].Digest || back.Queries[0].MedianMillis != 123456 || back.Probe.BytesPerSecond != 1<<30 ||
		back.Queries[0].P95Millis != 987654 || len(back.StreamMillis) != MaxStreams || back.QueriesPerHour != 123456789 {
		t.Fatalf("round trip lost data: %+v", back.Queries[0])
	}
	t.Logf("22 worst-case queries: %d bytes", len(enc))
	if _, err := DecodeBenchSummary("hello"); err == nil {
		t.Fatal("plain text decoded as a summary")
	}
}

func TestCompactKeepsTheCurrentAndPinnedGenerations(t *testing.T) {
	r := SyncReport{Result: ResultSucceeded, Generations: &GenerationSummary{Current: 40}}
	for g := int64(40); g > 8; g-- {
		r.Generations.Kept = append(r.Generations.Kept, GenerationInfo{Generation: g, Files: 1 << 40, Bytes: 1 << 50, Published: time.Now(), Pinned: g == 9 || g == 20})
	}
	data, err := r.Compact(1024)
	if err != nil {
		t.Fatal(err)
	}
	var got SyncReport
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	var gens []int64
	for _, k := range got.Generations.Kept {
		gens = append(gens, k.Generation)
	}
	if len(data) > 1024 || len(gens) < 3 || gens[0] != 40 || !slices.Contains(gens, 9) || !slices.Contains(gens, 20) {
		t.Fatalf("%d bytes, generations %v: want the current (40) and the pinned (9, 20) kept", len(data), gens)
	}
	if len(r.Generations.Kept) != 32 {
		t.Fatalf("Compact changed the report it was given: %d generations", len(r.Generations.Kept))
	}
}

// A BenchRun runs at most 32 queries (controllers.MaxRunQueries) with names of up to 63 characters:
// every query's digest, which does not compress, must still fit one termination message.
func TestThirtyTwoNamedQueriesFitATerminationMessage(t *testing.T) {
	res := &BenchResult{Label: "polars-streaming / 12cpu-48gi / mixed-staged", Engine: "polars", Workload: strings.Repeat("w", 63), Iterations: 100, Warmups: 10,
		Isolation: IsolationSession, SessionStartupMillis: make([]int64, 100), StartupMillis: 1234567, WallGeometricMeanMillis: 2345678}
	for i := range res.SessionStartupMillis {
		res.SessionStartupMillis[i] = 1234567 + int64(i)
	}
	for q := range 32 {
		sum := sha256.Sum256([]byte{byte(q)})
		res.Queries = append(res.Queries, QueryResult{
			Name: fmt.Sprintf("%02d-%s", q, strings.Repeat("n", 60)), Status: StatusSucceeded, MemorySource: "sampled",
			QueryMeasurements: QueryMeasurements{MedianMillis: 123456 + int64(q), MinMillis: 100000 + int64(q), MaxMillis: 999999 - int64(q),
				PeakMemoryBytes: 12345678901 + int64(q), PeakAnonBytes: 1234567890 + int64(q), PeakFileBytes: 1234567890 - int64(q),
				NetworkReadBytes: 987654321 + int64(q), Rows: 1000000 + int64(q), Digest: fmt.Sprintf("%x-%d", sum[:8], 1000000+q),
				P50Millis: 123457 + int64(q), P95Millis: 987653 - int64(q), P99Millis: 999998 - int64(q)},
			// The figures beside the query time, each distinct per query as real ones are.
			Timing: TimingEngine, MedianStartupMillis: 1234567 + int64(q), MedianWallMillis: 2345678 + 3*int64(q), PeakAboveReadyBytes: 11234567890 + 7*int64(q),
		})
	}
	enc, err := EncodeBenchSummary(res, TerminationMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeBenchSummary(string(enc))
	if err != nil || len(back.Queries) != 32 || back.Queries[31].Digest != res.Queries[31].Digest ||
		back.Queries[31].MedianWallMillis != res.Queries[31].MedianWallMillis || back.Queries[31].Timing != TimingEngine ||
		back.Queries[31].P99Millis != res.Queries[31].P99Millis {
		t.Fatalf("round trip: %v", err)
	}
	t.Logf("32 queries with 63-character names: %d bytes", len(enc))
}
