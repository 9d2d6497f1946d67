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
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// TestSparkCostChargesEveryPod: a Spark result costs its driver for the Job's wall time and each
// executor for its life, at the executors' own size; the figures in status say the same.
func TestSparkCostChargesEveryPod(t *testing.T) {
	j := benchJob{
		engine: datav1alpha1.BenchEngine{Name: datav1alpha1.EngineSpark, Executors: ptr.To[int32](3),
			ExecutorResources: &datav1alpha1.ExecutorResources{CPULimit: ptr.To(resource.MustParse("2")), MemoryLimit: ptr.To(resource.MustParse("4Gi"))}},
		config: datav1alpha1.ResourceConfig{Name: "d", CPU: resource.MustParse("1"), Memory: resource.MustParse("2Gi")},
	}
	u := sparkUsage(&wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{3, 1, 2}, ExecutorMillis: 30_000}, 10)
	if u.ExecutorPeakMaxBytes != 3 || u.PeakBytesSum != 16 || u.ExecutorSeconds != 30 {
		t.Fatalf("usage %+v: want the largest executor's peak 3, the sum 16 and 30 s of executors", u)
	}
	u = sparkCompute(u, j, 10_000)
	// Driver: 1 CPU and 2 GiB for 10 s; executors: 2 CPUs and 4 GiB for 30 s in all.
	if u.CoreSeconds != 10+60 || u.GiBSeconds != 20+120 {
		t.Errorf("coreSeconds %d, gibSeconds %d: want 70 and 140", u.CoreSeconds, u.GiBSeconds)
	}
	p := &datav1alpha1.Pricing{CoreSecond: "1", GiBSecond: "0.5"}
	driver := costMicros(p, j.config, datav1alpha1.BenchResult{WallMillis: 10_000}, 0)
	got := withSparkExecutorCost(p, driver, u, j)
	// (10 + 0.5 × 20) + (60 + 0.5 × 120) = 140 currency units.
	if got == nil || *got != 140_000_000 {
		t.Errorf("cost %v micros, want 140000000", got)
	}
	if withSparkExecutorCost(nil, nil, u, j) != nil {
		t.Error("a run without pricing has no cost")
	}
}

// TestSparkExecutorSizes: executorResources left out take the configuration's; a request or limit
// alone stands for both; the pod's memory is the JVM's heap plus Spark's overhead, exactly.
func TestSparkExecutorSizes(t *testing.T) {
	cfg := datav1alpha1.ResourceConfig{Name: "d", CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi")}
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	for _, tc := range []struct {
		res                  *datav1alpha1.ExecutorResources
		cpuReq, cpuLim, mem  string
		heapMiB, overheadMiB int64
	}{
		{nil, "1500m", "1500m", "2Gi", 1536, 512},
		{&datav1alpha1.ExecutorResources{CPURequest: q("500m")}, "500m", "500m", "2Gi", 1536, 512},
		{&datav1alpha1.ExecutorResources{CPURequest: q("500m"), CPULimit: q("2"), MemoryRequest: q("1Gi")}, "500m", "2", "1Gi", 640, 384},
		{&datav1alpha1.ExecutorResources{MemoryRequest: q("1Gi"), MemoryLimit: q("8Gi")}, "1500m", "1500m", "8Gi", 6144, 2048},
	} {
		req, lim, mem := sparkExecutorResources(benchJob{config: cfg, engine: datav1alpha1.BenchEngine{ExecutorResources: tc.res}})
		if req.String() != tc.cpuReq || lim.String() != tc.cpuLim || mem.String() != tc.mem {
			t.Errorf("%+v: got %s/%s/%s, want %s/%s/%s", tc.res, req.String(), lim.String(), mem.String(), tc.cpuReq, tc.cpuLim, tc.mem)
		}
		heap, overhead := sparkMemory(mem)
		if heap != tc.heapMiB || overhead != tc.overheadMiB || heap+overhead != mem.Value()>>20 {
			t.Errorf("memory %s: heap %d MiB + overhead %d MiB, want %d + %d", mem.String(), heap, overhead, tc.heapMiB, tc.overheadMiB)
		}
	}
}
