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

package runresults

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// The reports get the cache's costs, the run rate and the currency of the prices the run used.
func TestWireCarryCacheCosts(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	rate := int32(20)
	done := metav1.Now()
	br := &datav1alpha1.BenchRun{Spec: datav1alpha1.BenchRunSpec{Pricing: &datav1alpha1.Pricing{}, RunsPerDay: &rate}}
	br.Status.Pricing = &datav1alpha1.Pricing{Currency: "EUR"}
	br.Status.Results = []datav1alpha1.BenchResult{{Config: "c", Input: "volume", CompletionTime: &done, CostMicros: i(5), BreakEvenRuns: i(250), BreakEvenDays: i(13),
		Cache: &datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 7, StorageMicrosPerMonth: i(8), SyncIntervalSeconds: 3600, RefreshBytesPerDay: 9, RefreshMicrosPerDay: i(10)}}}
	out := Wire(br)
	if len(out) != 1 {
		t.Fatalf("%d results", len(out))
	}
	r := out[0]
	if r.Currency != "EUR" || r.RunsPerDay != 20 || *r.BreakEvenDays != 13 || *r.BreakEvenRuns != 250 {
		t.Errorf("currency %q, rate %d, break-even %d runs / %d days", r.Currency, r.RunsPerDay, *r.BreakEvenRuns, *r.BreakEvenDays)
	}
	if c := r.Cache; c == nil || c.StorageClass != "gp3" || *c.StorageMicrosPerMonth != 8 || c.SyncIntervalSeconds != 3600 || *c.RefreshMicrosPerDay != 10 || c.StorageBytes != 7 {
		t.Errorf("cache %+v", c)
	}
	// A run recorded before status.pricing existed: its spec's currency.
	br.Status.Pricing, br.Spec.Pricing = nil, &datav1alpha1.Pricing{Currency: "USD"}
	if got := Wire(br)[0].Currency; got != "USD" {
		t.Errorf("currency %q, want the spec's USD", got)
	}
}

// The reports get the streams' throughput and each query's percentiles.
func TestWireCarryStreams(t *testing.T) {
	done := metav1.Now()
	br := &datav1alpha1.BenchRun{Spec: datav1alpha1.BenchRunSpec{Streams: 2}}
	q := datav1alpha1.QueryResult{Name: "q1", Status: datav1alpha1.QuerySucceeded}
	q.P50Millis, q.P95Millis, q.P99Millis = 10, 20, 30
	br.Status.Results = []datav1alpha1.BenchResult{{Config: "c", Input: "volume", CompletionTime: &done, Streams: 2, StreamMillis: []int64{400, 500}, QueriesPerHour: 7200,
		Queries: []datav1alpha1.QueryResult{q}}}
	r := Wire(br)[0]
	if r.Streams != 2 || len(r.StreamMillis) != 2 || r.StreamMillis[1] != 500 || r.QueriesPerHour != 7200 {
		t.Errorf("streams %d, stream times %v, %d queries per hour", r.Streams, r.StreamMillis, r.QueriesPerHour)
	}
	if got := r.Queries[0]; got.P50Millis != 10 || got.P95Millis != 20 || got.P99Millis != 30 {
		t.Errorf("percentiles %d/%d/%d, want 10/20/30", got.P50Millis, got.P95Millis, got.P99Millis)
	}
}
