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
	"context"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// watchGets records how many GETs run at once and how many goroutines the process has while they do.
type watchGets struct {
	cache.Store
	mu                       sync.Mutex
	inFlight, maxInFlight    int
	maxGoroutines, requested int
}

func (w *watchGets) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	w.mu.Lock()
	w.inFlight++
	w.requested++
	w.maxInFlight = max(w.maxInFlight, w.inFlight)
	w.maxGoroutines = max(w.maxGoroutines, runtime.NumGoroutine())
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inFlight--
		w.mu.Unlock()
	}()
	return w.Store.Get(ctx, key, etag, r)
}

// TestMemoryIsBoundedWhateverTheObject syncs objects of many pieces (32 ranges of 1 MiB, and a
// multipart upload of 8 parts) with parallelism 2: at most 2 GETs, 2 copy buffers and a handful of
// goroutines at any time, not one per piece.
func TestMemoryIsBoundedWhateverTheObject(t *testing.T) {
	e := newEnv(t)
	big := testfiles.Random(32<<20, 1)
	e.put("big.bin", big)
	var parts [][]byte
	for i := range 8 {
		parts = append(parts, testfiles.Random(5<<20, uint64(10+i)))
	}
	e.putMultipart("parts.bin", parts, types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite)
	for i := range 20 {
		e.put("small/"+string(rune('a'+i))+".bin", testfiles.Random(1000, uint64(100+i)))
	}

	base := runtime.NumGoroutine()
	st, reqs := e.store(func(s *s3store.Store) cache.Store { return &watchGets{Store: s} })
	opts := e.options(reqs)
	opts.Parallelism, opts.PartSize = 2, 1<<20
	cache.ResetBuffersPeak()
	rep, err := cache.Sync(context.Background(), st, opts)
	if err != nil {
		t.Fatalf("sync: %v %+v", err, rep)
	}
	w := st.(*watchGets)
	if w.requested != 32+8+20 {
		t.Fatalf("%d GETs, want %d", w.requested, 32+8+20)
	}
	if w.maxInFlight > 2 {
		t.Errorf("%d GETs at once with parallelism 2", w.maxInFlight)
	}
	if peak := cache.BuffersPeak(); peak > 2 {
		t.Errorf("%d copy buffers out at once with parallelism 2", peak)
	}
	// 2 workers, 2 piece goroutines, the publisher, the listing, and the HTTP client's two goroutines
	// per connection: a constant, where one goroutine per piece would add 40.
	if extra := w.maxGoroutines - base; extra > 16 {
		t.Errorf("%d goroutines beyond the %d at the start", extra, base)
	}
	e.expectFile("big.bin", big)
	e.expectVerified()
	t.Logf("max %d GETs at once, %d buffers, %d goroutines (%d at the start)", w.maxInFlight, cache.BuffersPeak(), w.maxGoroutines, base)
}
