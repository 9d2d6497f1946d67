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
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqcache/pqcache/internal/wire"
)

// ProbeResult is the sequential read throughput of an input path, measured without a query engine.
type ProbeResult = wire.ProbeResult

// probeBuffer is the read size of one stream: large sequential reads, as a scan does.
const probeBuffer = 1 << 20

// Probe reads every file under dir once, sequentially, with streams files in flight at a time, and
// reports the throughput: the input path's speed (volume, mount, ...) without an engine in the way.
// Files under a .pqcache directory (the cache's own bookkeeping) are skipped.
func Probe(ctx context.Context, dir string, streams int) (*ProbeResult, error) {
	if streams < 1 {
		streams = 1
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".pqcache" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
	)
	next := make(chan string)
	start := time.Now()
	for range streams {
		wg.Go(func() {
			buf := make([]byte, probeBuffer)
			for p := range next {
				n, err := readAll(ctx, p, buf)
				total.Add(n)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, f := range files {
		select {
		case next <- f:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	r := &ProbeResult{Files: int64(len(files)), Bytes: total.Load(), Streams: streams, Millis: elapsed.Milliseconds()}
	if elapsed > 0 {
		r.BytesPerSecond = int64(float64(r.Bytes) / elapsed.Seconds())
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, errors.Join(errs...)
}

func readAll(ctx context.Context, path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for ctx.Err() == nil {
		k, err := f.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return n, ctx.Err()
}
