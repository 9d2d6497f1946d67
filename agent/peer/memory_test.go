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

package peer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// millionObjects is how many objects TestServingAMillionObjects serves.
const millionObjects = 1_000_000

// maxServingHeap is the most the Go heap may grow while a peer serves a generation of a million
// objects twice over (two full listings and some GETs, the client's side included). docs/sync.md
// quotes it; the growth measured is about 8 MiB (docs/benchmarks.md), of which the marks about 1 MiB.
const maxServingHeap = 64 << 20

// millionKey is the i-th key, in key order: 50 tables of 20,000 partitions.
func millionKey(i int) string {
	return fmt.Sprintf("table%02d/batch=%06d/part-0.parquet", i/20_000, i)
}

// publishMillion publishes generation 1 under a fresh root: ten real files, every 100,000th key, form
// the tree, and the object index lists all million keys, written as Publish writes it. The other
// files are never fetched, so they need not exist: the index is what a peer holds in memory.
func publishMillion(t *testing.T) (root string, files map[string][]byte) {
	t.Helper()
	root = t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	files = map[string][]byte{}
	var keys []string
	for i := 0; i < millionObjects; i += 100_000 {
		k := millionKey(i)
		files[k] = fmt.Appendf(nil, "PAR1 file %d PAR1", i)
		keys = append(keys, k)
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(k)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, k), files[k], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := func(fn func(manifest.Entry) error) error {
		for _, k := range keys {
			if err := fn(manifest.Entry{Key: k, Size: int64(len(files[k])), LastModified: at, ETag: `"e"`}); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := generations.Publish(context.Background(), root, 1, entries, generations.Policy{Keep: 1, Index: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	writeMillionIndex(t, generations.IndexPath(root, 1), files, at)
	return root, files
}

// writeMillionIndex replaces the index at path with one of millionObjects objects.
func writeMillionIndex(t *testing.T, path string, files map[string][]byte, at time.Time) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range millionObjects {
		k := millionKey(i)
		o := generations.Object{Key: k, Size: 64 << 20, LastModified: at, ETag: fmt.Sprintf(`"%032x"`, i),
			Checksum: "CRC64NVME:" + fmt.Sprintf("%012x", i)}
		if b, ok := files[k]; ok {
			o.Size, o.ETag, o.Checksum = int64(len(b)), `"e"`, ""
		}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// heapPeak samples the heap in use every 5 ms until stopped.
type heapPeak struct {
	base, peak atomic.Uint64
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapPeak{stop: make(chan struct{})}
	h.base.Store(ms.HeapInuse)
	h.peak.Store(ms.HeapInuse)
	h.wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return h
}

// growth stops the sampler and returns the peak growth over the baseline.
func (h *heapPeak) growth() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak.Load() - h.base.Load()
}

// TestServingAMillionObjects lists a generation of a million objects through the peer client, twice
// (the second time from the peer's cached index), and fetches the files it has, while sampling the
// heap: the peer's memory must not grow with the number of objects it serves.
func TestServingAMillionObjects(t *testing.T) {
	root, files := publishMillion(t)
	server := &peer.Server{Auth: testKey, Roots: func(b string) (string, bool) { return root, b == dataset }}
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	from, err := peer.NewStore(context.Background(), srv.URL, testKey, dataset)
	if err != nil {
		t.Fatal(err)
	}
	heap := startHeapPeak()
	start := time.Now()
	for round := range 2 {
		listMillion(t, from, round)
		for k, want := range files {
			body, _, err := from.Get(context.Background(), peer.Prefix(1)+k, `"e"`, s3store.Range{End: -1})
			if err != nil {
				t.Fatalf("get %s: %v", k, err)
			}
			got, err := io.ReadAll(body)
			_ = body.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("get %s: %q, %v; want %q", k, got, err, want)
			}
		}
	}
	growth := heap.growth()
	t.Logf("served %d objects twice in %v: peak heap growth %.1f MiB", millionObjects, time.Since(start).Round(time.Millisecond), float64(growth)/(1<<20))
	if growth > maxServingHeap {
		t.Errorf("the heap grew by %.1f MiB serving %d objects, want at most %d MiB", float64(growth)/(1<<20), millionObjects, maxServingHeap>>20)
	}
}

// listMillion lists generation 1 whole and checks every key comes once, in order.
func listMillion(t *testing.T, from *s3store.Store, round int) {
	t.Helper()
	n := 0
	err := from.List(context.Background(), peer.Prefix(1), peer.Prefix(1), func(objs []plan.Object) error {
		for _, o := range objs {
			if want := millionKey(n); o.Key != want {
				return fmt.Errorf("object %d is %q, want %q", n, o.Key, want)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %d: %v", round, err)
	}
	if n != millionObjects {
		t.Fatalf("listing %d: %d objects, want %d", round, n, millionObjects)
	}
}
