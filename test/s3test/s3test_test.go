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

package s3test_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/pqcache/pqcache/test/s3test"
)

// TestServerSpeaksTheS3ThatSyncNeeds checks, against the real server the helper starts, the behaviour
// the sync engine builds on: paginated listing with size, time and ETag; ranged GETs; a GET
// conditional on a stale ETag refused with 412; objects stored as plain files under Root.
func TestServerSpeaksTheS3ThatSyncNeeds(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	c := srv.Client()
	srv.CreateBucket(t, "data")

	const n = 7
	for i := range n {
		srv.PutObject(t, "data", fmt.Sprintf("t/part-%02d.parquet", i), []byte(fmt.Sprintf("payload %d", i)))
	}

	// Pagination: 7 objects, 3 per page, must arrive complete, in key order, over 3 pages.
	var keys []string
	pages := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("data"), Prefix: aws.String("t/"), MaxKeys: aws.Int32(3)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		pages++
		for _, o := range out.Contents {
			if aws.ToInt64(o.Size) == 0 || o.LastModified == nil || aws.ToString(o.ETag) == "" {
				t.Errorf("listing of %s lacks size, time or ETag: %+v", aws.ToString(o.Key), o)
			}
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	if len(keys) != n || pages != 3 {
		t.Fatalf("listed %d keys over %d pages, want %d over 3: %v", len(keys), pages, n, keys)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("listing not in key order: %v", keys)
		}
	}

	// Ranged GET.
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("t/part-03.parquet"), Range: aws.String("bytes=2-5")})
	if err != nil {
		t.Fatalf("ranged get: %v", err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "yloa" {
		t.Fatalf("bytes=2-5 of %q returned %q", "payload 3", body)
	}

	// If-Match with a stale ETag: the server must refuse rather than return the new content.
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("t/part-00.parquet")})
	if err != nil {
		t.Fatal(err)
	}
	srv.PutObject(t, "data", "t/part-00.parquet", []byte("rewritten"))
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("t/part-00.parquet"), IfMatch: head.ETag})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("GET with a stale If-Match returned %v, want PreconditionFailed", err)
	}

	// Objects are plain files under Root/<bucket>/<key>.
	onDisk, err := os.ReadFile(filepath.Join(srv.Root, "data", "t", "part-00.parquet"))
	if err != nil || string(onDisk) != "rewritten" {
		t.Fatalf("object file under Root: %q, %v", onDisk, err)
	}
}

// TestKillAndRestart checks the fault-injection hooks: a killed server refuses requests, and a
// restarted one serves the same objects on the same endpoint.
func TestKillAndRestart(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	srv.PutObject(t, "bkt", "k", []byte("v"))
	endpoint := srv.Endpoint

	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// One attempt only: the SDK's retries would only slow the expected failure down.
	if _, err := srv.Client(func(o *s3.Options) { o.RetryMaxAttempts = 1 }).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); err == nil {
		t.Fatal("a killed server answered a request")
	}

	srv.Restart(t)
	if srv.Endpoint != endpoint {
		t.Fatalf("restart moved the endpoint from %s to %s", endpoint, srv.Endpoint)
	}
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); string(b) != "v" {
		t.Fatalf("after restart got %q, want %q", b, "v")
	}
}

// TestStartTLS checks that a TLS server answers over HTTPS with the CA it returns, and its own
// client trusts that CA.
func TestStartTLS(t *testing.T) {
	srv, ca := s3test.StartTLS(t)
	if !strings.HasPrefix(srv.Endpoint, "https://127.0.0.1:") || !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		t.Fatalf("endpoint %s, CA %q: want https on 127.0.0.1 and a PEM certificate", srv.Endpoint, ca)
	}
	srv.CreateBucket(t, "tls")
	srv.PutObject(t, "tls", "k", []byte("over TLS"))
}
