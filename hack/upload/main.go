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

// Command upload puts a directory's files into s3://BUCKET/PREFIX (creating the bucket if needed), in
// parallel, for demos and benchmarks against a local S3 server. Credentials come from the environment.
//
//	go run ./hack/upload -endpoint http://127.0.0.1:7070 DIR s3://bucket/prefix/ [FILE...]
//
// With FILE arguments (paths relative to DIR) only those are uploaded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3-compatible endpoint")
	parallel := flag.Int("parallel", 8, "concurrent uploads")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: upload [-endpoint URL] DIR s3://bucket/prefix/ [FILE...]")
		os.Exit(2)
	}
	if err := run(*endpoint, *parallel, flag.Arg(0), flag.Arg(1), flag.Args()[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "upload:", err)
		os.Exit(1)
	}
}

func run(endpoint string, parallel int, dir, dst string, only []string) error {
	ctx := context.Background()
	bucket, prefix, ok := strings.Cut(strings.TrimPrefix(dst, "s3://"), "/")
	if !ok && bucket == "" {
		return fmt.Errorf("destination %q must look like s3://bucket/prefix/", dst)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	files := only
	if len(files) == 0 {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return err
		}
	}
	jobs := make(chan string)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for rel := range jobs {
				f, err := os.Open(filepath.Join(dir, rel))
				if err != nil {
					errs <- err
					continue
				}
				_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + rel), Body: f})
				f.Close()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", rel, err)
				}
			}
		})
	}
	for _, f := range files {
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	fmt.Printf("uploaded %d files to s3://%s/%s\n", len(files)-len(all), bucket, prefix)
	return errors.Join(all...)
}
