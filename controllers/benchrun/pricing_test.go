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

package benchrun

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

func TestCostMicros(t *testing.T) {
	cfg := datav1alpha1.ResourceConfig{Name: "c", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")}
	r := datav1alpha1.BenchResult{WallMillis: 90_000, StageMillis: 10_000, StagedBytes: 5_000_000_000}
	if costMicros(nil, cfg, r, 0) != nil {
		t.Fatal("a cost without pricing")
	}
	// 100 s × (2 cores × 0.00001 + 4 GiB × 0.000001) × 0.5 + 5 GB × 0.02 = 0.0012 + 0.1 = 0.1012
	got := costMicros(&datav1alpha1.Pricing{CoreSecond: "0.00001", GiBSecond: "0.000001", TransferGB: "0.02", PlacementMultiplier: "0.5"}, cfg, r, 0)
	if got == nil || *got != 101_200 {
		t.Fatalf("cost %v micros, want 101200", got)
	}
	// No multiplier means 1; no transfer price means free transfer.
	got = costMicros(&datav1alpha1.Pricing{CoreSecond: "0.00001"}, cfg, r, 0)
	if *got != 2_000 {
		t.Fatalf("cost %d micros, want 2000", *got)
	}
}

func TestBreakEvenRuns(t *testing.T) {
	p := &datav1alpha1.Pricing{TransferGB: "0.02"}
	c := func(v int64) *int64 { return &v }
	results := []datav1alpha1.BenchResult{
		{Config: "b", Input: "volume", CostMicros: c(1_000)},
		{Config: "a", Input: "volume", CostMicros: c(2_000)},
		{Config: "a", Input: "s3", CostMicros: c(12_000)},
	}
	// Filling the cache with 50 GB costs 1 (1,000,000 micros); each run saves 10,000 micros: 100 runs.
	if got := breakEvenRuns(p, results, 50_000_000_000); got == nil || *got != 100 {
		t.Fatalf("break-even %v, want 100", got)
	}
	if got := breakEvenRuns(p, results[:2], 50_000_000_000); got != nil {
		t.Fatalf("break-even %d without an s3 result", *got)
	}
	results[2].CostMicros = c(1_500) // S3 cheaper: never pays off
	if got := breakEvenRuns(p, results, 50_000_000_000); got != nil {
		t.Fatalf("break-even %d when S3 is cheaper", *got)
	}
}

func TestCostsThatDoNotFitAreNoEstimate(t *testing.T) {
	cfg := datav1alpha1.ResourceConfig{Name: "c", CPU: resource.MustParse("64"), Memory: resource.MustParse("1Ti")}
	r := datav1alpha1.BenchResult{WallMillis: 1 << 40}
	if got := costMicros(&datav1alpha1.Pricing{CoreSecond: "99999999999"}, cfg, r, 0); got != nil {
		t.Fatalf("cost %d micros: an overflow wrapped", *got)
	}
	huge := []datav1alpha1.BenchResult{{Config: "a", Input: "volume", CostMicros: ptrInt(0)}, {Config: "a", Input: "s3", CostMicros: ptrInt(1)}}
	if got := breakEvenRuns(&datav1alpha1.Pricing{TransferGB: "99999999999"}, huge, 1<<62); got != nil {
		t.Fatalf("break-even %d: an overflow wrapped", *got)
	}
}

func ptrInt(v int64) *int64 { return &v }

func TestBreakEvenPerEngineAndConfiguration(t *testing.T) {
	p := &datav1alpha1.Pricing{TransferGB: "0.02"}
	c := func(v int64) *int64 { return &v }
	results := []datav1alpha1.BenchResult{
		{Engine: "polars", Config: "a", Input: "volume", CostMicros: c(2_000)},
		{Engine: "polars", Config: "a", Input: "s3", CostMicros: c(12_000)},
		{Engine: "duckdb", Config: "a", Input: "volume", CostMicros: c(1_000)},
		{Engine: "duckdb", Config: "a", Input: "s3", CostMicros: c(3_000)},
		{Engine: "duckdb", Config: "b", Input: "volume", CostMicros: c(1_000)},
	}
	// Filling costs 1,000,000 micros: polars saves 10,000 a run (100 runs), duckdb 2,000 (500 runs).
	keys, runs := breakEvens(p, results, 50_000_000_000)
	if len(keys) != 2 || keys[0] != "duckdb/a" || keys[1] != "polars/a" {
		t.Fatalf("keys %v, want duckdb/a and polars/a (duckdb/b has no s3 result)", keys)
	}
	if *runs["polars/a"] != 100 || *runs["duckdb/a"] != 500 {
		t.Fatalf("break-evens polars %d, duckdb %d; want 100 and 500", *runs["polars/a"], *runs["duckdb/a"])
	}
	if got := breakEvenRuns(p, results, 50_000_000_000); *got != 500 {
		t.Fatalf("the run's break-even %d, want the first (duckdb/a) 500", *got)
	}
}
