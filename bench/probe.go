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

	"github.com/pqcache/pqcache/api/wire"
)

// probeBuffer is the read size of one stream: large sequential reads, as a scan does.
const probeBuffer = 1 << 20

// DefaultProbeBytes bounds what a probe reads by default: enough for a steady rate on any volume, and
// far less than reading a whole large data set again after every run.
const DefaultProbeBytes = 1 << 30

// ProbeSource is what a probe reads: the files of a directory (DirSource), or the objects under a
// bucket prefix (internal/cli's, through cache/s3store: bench itself stays free of the AWS SDK).
type ProbeSource interface {
	// Files lists what to read, in the order to read it.
	Files(ctx context.Context) ([]string, error)
	// Open starts one sequential read of a listed file: a GET of a whole object, a file opened.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// DirSource is the regular files under a directory, except those under a .pqcache directory (the
// cache's own bookkeeping).
type DirSource string

// Files lists the files under the directory.
func (d DirSource) Files(context.Context) ([]string, error) {
	var files []string
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".pqcache" {
			return filepath.SkipDir
		}
		if e.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", string(d), err)
	}
	return files, nil
}

// Open opens a listed file.
func (DirSource) Open(_ context.Context, name string) (io.ReadCloser, error) { return os.Open(name) }

// Probe reads the files under dir sequentially, with streams files in flight at a time, until it has
// read maxBytes (0: DefaultProbeBytes; negative: everything), and reports the throughput: the input
// path's speed (volume, mount, ...) without an engine in the way. Files under a .pqcache directory
// (the cache's own bookkeeping) are skipped.
func Probe(ctx context.Context, dir string, streams int, maxBytes int64) (*wire.ProbeResult, error) {
	return ProbeFrom(ctx, DirSource(dir), streams, maxBytes)
}

// ProbeFrom is Probe over any source: the same parallel sequential reads, bounded alike, of a
// directory's files or a bucket's objects, so that the two input paths are measured the same way.
func ProbeFrom(ctx context.Context, src ProbeSource, streams int, maxBytes int64) (*wire.ProbeResult, error) {
	if streams < 1 {
		streams = 1
	}
	if maxBytes == 0 {
		maxBytes = DefaultProbeBytes
	}
	files, err := src.Files(ctx)
	if err != nil {
		return nil, err
	}
	var (
		total, read atomic.Int64
		wg          sync.WaitGroup
		mu          sync.Mutex
		errs        []error
	)
	enough := func() bool { return maxBytes > 0 && total.Load() >= maxBytes }
	next := make(chan string)
	start := time.Now()
	for range streams {
		wg.Go(func() {
			buf := make([]byte, probeBuffer)
			for p := range next {
				if enough() {
					continue // drain: the probe has its fill
				}
				read.Add(1)
				err := readAll(ctx, src, p, buf, &total, enough)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
feed:
	for _, f := range files {
		if enough() {
			break
		}
		select {
		case next <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	r := &wire.ProbeResult{Files: read.Load(), Bytes: total.Load(), Streams: streams, Millis: elapsed.Milliseconds()}
	if elapsed > 0 {
		r.BytesPerSecond = int64(float64(r.Bytes) / elapsed.Seconds())
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, errors.Join(errs...)
}

// readAll reads name to its end, or until enough says the probe has read its fill, counting into total.
func readAll(ctx context.Context, src ProbeSource, name string, buf []byte, total *atomic.Int64, enough func() bool) error {
	f, err := src.Open(ctx, name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read
	for ctx.Err() == nil && !enough() {
		k, err := f.Read(buf)
		total.Add(int64(k))
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return ctx.Err()
}
