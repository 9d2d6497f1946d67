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
// into a directory. It lists the prefix (ListObjectsV2) and GETs every object into its file with
// -parallel requests in flight, objects larger than -part-size in ranged parts, and nothing else: no
// manifest, no verification, no fsync, no staging, no rename. A sync engine cannot be faster than
// this on the same machine; hack/bench/sync.sh reports every tool against it, and against it plus
// the `sync -f` that makes its bytes durable.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint URL")
	parallel := flag.Int("parallel", 8, "GETs in flight")
	partSize := flag.Int64("part-size", 16<<20, "objects larger than this are fetched in ranged parts of this size")
	flag.Parse()
	if flag.NArg() != 2 || !strings.HasPrefix(flag.Arg(0), "s3://") {
		log.Fatal("usage: floor [-endpoint URL] [-parallel N] s3://BUCKET/PREFIX DIR")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(flag.Arg(0), "s3://"), "/")
	dir := flag.Arg(1)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if *endpoint != "" {
			o.BaseEndpoint = endpoint
		}
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})

	type job struct {
		key        string
		start, end int64 // end < 0: the whole object
		f          *os.File
		done       *sync.WaitGroup
	}
	jobs := make(chan job, *parallel)
	var workers sync.WaitGroup
	for range *parallel {
		workers.Go(func() {
			buf := make([]byte, 256<<10)
			for j := range jobs {
				in := &s3.GetObjectInput{Bucket: &bucket, Key: &j.key}
				if j.end >= 0 {
					in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", j.start, j.end))
				}
				out, err := client.GetObject(ctx, in)
				if err != nil {
					log.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.NewOffsetWriter(j.f, j.start), out.Body, buf); err != nil {
					log.Fatal(err)
				}
				out.Body.Close()
				j.done.Done()
			}
		})
	}
	// Files close once their last part is written; a goroutine per open file waits for that.
	var closers sync.WaitGroup
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	made := map[string]bool{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, o := range page.Contents {
			key, size := aws.ToString(o.Key), aws.ToInt64(o.Size)
			path := filepath.Join(dir, strings.TrimPrefix(key, prefix))
			if d := filepath.Dir(path); !made[d] {
				if err := os.MkdirAll(d, 0o755); err != nil {
					log.Fatal(err)
				}
				made[d] = true
			}
			f, err := os.Create(path)
			if err != nil {
				log.Fatal(err)
			}
			done := &sync.WaitGroup{}
			if size <= *partSize {
				done.Add(1)
				jobs <- job{key: key, end: -1, f: f, done: done}
			} else {
				for off := int64(0); off < size; off += *partSize {
					done.Add(1)
					jobs <- job{key: key, start: off, end: min(off+*partSize, size) - 1, f: f, done: done}
				}
			}
			closers.Go(func() {
				done.Wait()
				if err := f.Close(); err != nil {
					log.Fatal(err)
				}
			})
		}
	}
	close(jobs)
	workers.Wait()
	closers.Wait()
}
