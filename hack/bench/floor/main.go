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

// Command floor is the "floor" of the sync benchmark: the least a client can do to copy an S3 prefix
// into a directory. It lists the prefix and GETs every object into its file with -parallel requests
// in flight, objects larger than -part-size in ranged parts, and nothing else: no manifest, no
// verification, no fsync, no staging, no rename. It uses pqcache's own S3 client (package s3store:
// the same listing and the same lean GET path), so that the difference between pqcache and the floor
// is what pqcache does beyond moving bytes; -sdk sends the GETs through the AWS SDK's GetObject
// instead, to show what that costs. -direct writes the aligned bytes of files over -direct-above with
// direct I/O (O_DIRECT) into space reserved first (fallocate) instead of through the page cache, as
// pqcache does: the floor of a client that writes that way. hack/bench/sync.sh reports every tool
// against it, and against it plus the `sync -f` that makes its bytes durable.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// getter GETs key (range r) from the store: s3store's lean path or the SDK's GetObject.
type getter func(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error)

// options are how the objects are copied.
type options struct {
	parallel    int   // GETs in flight
	partSize    int64 // objects larger than this are fetched in ranged parts of this size
	direct      bool  // files over directAbove written with direct I/O
	directAbove int64
}

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint URL")
	parallel := flag.Int("parallel", 8, "GETs in flight")
	partSize := flag.Int64("part-size", 16<<20, "objects larger than this are fetched in ranged parts of this size")
	sdk := flag.Bool("sdk", false, "GET through the AWS SDK's GetObject instead of pqcache's lean GET path")
	traceFile := flag.String("trace", "", "write an execution trace to this file (go tool trace)")
	listOnly := flag.Bool("list-only", false, "only list the prefix and print the number of objects: the listing time")
	direct := flag.Bool("direct", false, "write files over -direct-above bytes with direct I/O (O_DIRECT), their unaligned tails through the page cache")
	directAbove := flag.Int64("direct-above", 256<<10, "with -direct: the size above which a file is written with direct I/O")
	flag.Parse()
	if *traceFile != "" {
		defer startTrace(*traceFile)()
	}
	if flag.NArg() != 2 || !strings.HasPrefix(flag.Arg(0), "s3://") {
		log.Fatal("usage: floor [-endpoint URL] [-parallel N] [-part-size BYTES] [-sdk] s3://BUCKET/PREFIX DIR")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(flag.Arg(0), "s3://"), "/")
	dir := flag.Arg(1)
	ctx := context.Background()
	store, err := s3store.New(ctx, s3store.Config{Bucket: bucket, Endpoint: *endpoint, PathStyle: true})
	if err != nil {
		log.Fatal(err)
	}
	if *listOnly {
		n := 0
		if err := store.List(ctx, prefix, prefix, func(page []plan.Object) error { n += len(page); return nil }); err != nil {
			log.Fatal(err)
		}
		fmt.Println(n, "objects")
		return
	}
	get := getter(store.Get)
	if *sdk {
		get = sdkGetter(ctx, bucket, *endpoint)
	}
	copyPrefix(ctx, store, get, prefix, dir, options{parallel: *parallel, partSize: *partSize, direct: *direct, directAbove: *directAbove})
}

// startTrace writes an execution trace to file until the function it returns is called.
func startTrace(file string) (stop func()) {
	tf, err := os.Create(file)
	if err != nil {
		log.Fatal(err)
	}
	if err := trace.Start(tf); err != nil {
		log.Fatal(err)
	}
	return func() {
		trace.Stop()
		if err := tf.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// job is one GET: an object, or a part of it, into its file at the same offset.
type job struct {
	key    string
	r      s3store.Range
	f      *os.File
	direct *os.File // nil: through the page cache only
	done   *sync.WaitGroup
}

// copyPrefix lists prefix and copies every object into its file under dir, o.parallel GETs at a time.
func copyPrefix(ctx context.Context, store *s3store.Store, get getter, prefix, dir string, o options) {
	jobs := make(chan job, o.parallel)
	workers := startWorkers(ctx, get, o.parallel, jobs)
	// Files close once their last part is written; a goroutine per open file waits for that.
	var closers sync.WaitGroup
	made := map[string]bool{}
	err := store.List(ctx, prefix, prefix, func(page []plan.Object) error {
		for _, obj := range page {
			if err := queue(obj, prefix, dir, o, made, jobs, &closers); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	close(jobs)
	workers.Wait()
	closers.Wait()
}

// startWorkers starts n workers that GET each job into its file, until jobs is closed.
func startWorkers(ctx context.Context, get getter, n int, jobs <-chan job) *sync.WaitGroup {
	var workers sync.WaitGroup
	for range n {
		workers.Go(func() {
			buf := alignedBuffer(256 << 10)
			for j := range jobs {
				body, info, err := get(ctx, j.key, "", j.r)
				if err != nil {
					log.Fatal(err)
				}
				if j.direct != nil {
					err = copyDirect(j.f, j.direct, info.Start, body, buf)
				} else {
					_, err = io.CopyBuffer(io.NewOffsetWriter(j.f, info.Start), body, buf)
				}
				if err != nil {
					log.Fatal(err)
				}
				_ = body.Close() // read to its end already
				j.done.Done()
			}
		})
	}
	return &workers
}

// queue creates the file of obj under dir and queues its GETs (one, or one per part), with a closer
// that closes the file once they are done.
func queue(obj plan.Object, prefix, dir string, o options, made map[string]bool, jobs chan<- job, closers *sync.WaitGroup) error {
	path := filepath.Join(dir, obj.Key)
	if d := filepath.Dir(path); !made[d] {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		made[d] = true
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var df *os.File
	if o.direct && obj.Size > o.directAbove {
		// Direct writes that extend a file are serialised by the filesystem (ext4 takes the
		// inode lock exclusively): reserve the file's blocks first, as pqcache does.
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, obj.Size); err != nil {
			return err
		}
		if df, err = os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0); err != nil {
			return err
		}
	}
	done := &sync.WaitGroup{}
	key := prefix + obj.Key
	if obj.Size <= o.partSize {
		done.Add(1)
		jobs <- job{key: key, r: s3store.Whole, f: f, direct: df, done: done}
	} else {
		for off := int64(0); off < obj.Size; off += o.partSize {
			done.Add(1)
			jobs <- job{key: key, r: s3store.Range{Start: off, End: min(off+o.partSize, obj.Size) - 1}, f: f, direct: df, done: done}
		}
	}
	closers.Go(func() {
		done.Wait()
		if df != nil {
			if err := df.Close(); err != nil {
				log.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	})
	return nil
}

// sdkGetter GETs with the AWS SDK's GetObject, no checksum validation.
func sdkGetter(ctx context.Context, bucket, endpoint string) getter {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return func(ctx context.Context, key, _ string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
		in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
		if r.End >= 0 {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", r.Start, r.End))
		}
		out, err := client.GetObject(ctx, in)
		if err != nil {
			return nil, s3store.GetInfo{}, err
		}
		return out.Body, s3store.GetInfo{Start: r.Start, Length: aws.ToInt64(out.ContentLength)}, nil
	}
}

// copyDirect writes body at off: whole buffers (aligned, as the buffer and the part offsets are) with
// direct I/O, a last partial one through the page cache.
func copyDirect(f, direct *os.File, off int64, body io.Reader, buf []byte) error {
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			w := f
			if n%4096 == 0 && off%4096 == 0 {
				w = direct
			}
			if _, werr := w.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// alignedBuffer returns n bytes starting on a 4 KiB boundary, as direct I/O needs of memory.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 4095)
	return b[off : off+n : off+n]
}
