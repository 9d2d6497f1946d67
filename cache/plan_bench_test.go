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

package cache_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
)

// BenchmarkPlanUnchanged merges a listing of n unchanged objects with a manifest of n entries, the
// whole diff step of an unchanged sync without the network, and reports the peak heap growth: it must
// stay flat as n grows from 10k to 1M (`go test ./cache -run '^$' -bench PlanUnchanged -benchtime 1x`).
func BenchmarkPlanUnchanged(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			m, err := manifest.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			key := func(i int) string { return fmt.Sprintf("table%02d/batch=%06d/part.parquet", i%50, i) }
			// Keys must be inserted and listed in sorted order; this numbering sorts by table, then batch.
			order := func(yield func(int) bool) {
				for t := range 50 {
					for i := t; i < n; i += 50 {
						if !yield(i) {
							return
						}
					}
				}
			}
			batch := make([]manifest.Entry, 0, 10_000)
			for i := range order {
				batch = append(batch, manifest.Entry{Key: key(i), Size: int64(i), ETag: fmt.Sprintf(`"%032x"`, i), LastModified: at})
				if len(batch) == cap(batch) {
					if err := m.Resolve(batch, nil, nil); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			if err := m.Resolve(batch, nil, nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				var peak atomic.Uint64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > peak.Load() {
							peak.Store(ms.HeapInuse)
						}
						select {
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				})
				unchanged := 0
				merge := &plan.Merge{
					Next:      m.Iterate("").Next,
					Emit:      func(a plan.Action) error { return fmt.Errorf("unexpected action for %s", a.Object.Key) },
					Unchanged: func(manifest.Entry) { unchanged++ },
					Prune:     true,
				}
				var folds plan.FoldTracker // as the sync does, before the merge
				for i := range order {
					if folds.Add(key(i)) {
						b.Fatalf("%s collides by case", key(i))
					}
					if err := merge.Listed(plan.Object{Key: key(i), Size: int64(i), ETag: fmt.Sprintf(`"%032x"`, i), LastModified: at}); err != nil {
						b.Fatal(err)
					}
				}
				if err := merge.Finish(); err != nil {
					b.Fatal(err)
				}
				close(stop)
				wg.Wait()
				if unchanged != n {
					b.Fatalf("%d unchanged, want %d", unchanged, n)
				}
				growth := int64(peak.Load()) - int64(base.HeapInuse)
				b.ReportMetric(float64(max(growth, 0))/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/float64(b.N), "ns/object")
			}
		})
	}
}
