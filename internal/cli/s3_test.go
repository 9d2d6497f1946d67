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

package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/test/s3test"
)

// TestS3PutAndRm loads a directory and a single file into a bucket that does not exist yet, then
// deletes one object, against a real versitygw.
func TestS3PutAndRm(t *testing.T) {
	srv := s3test.Start(t)
	useTestCredentials(t)
	src := t.TempDir()
	for name, body := range map[string]string{"a/1.parquet": "one", "a/2.parquet": "two", "b/3.parquet": "three"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--endpoint", srv.Endpoint, "--path-style"}
	report := filepath.Join(t.TempDir(), "report.json")
	out, err := run(t, append([]string{"s3", "put", src, "s3://fresh-bucket/data", "--report-file", report}, common...)...)
	if err != nil || !strings.Contains(out, "put 3 files (11 bytes) into s3://fresh-bucket/data") {
		t.Fatalf("put dir: %v\n%s", err, out)
	}
	if saved, _ := os.ReadFile(report); string(saved) != `{"files":3,"bytes":11}` {
		t.Fatalf("report %q", saved)
	}
	// A single file to an exact key, replacing one of the objects.
	if out, err := run(t, append([]string{"s3", "put", filepath.Join(src, "b/3.parquet"), "s3://fresh-bucket/data/a/1.parquet"}, common...)...); err != nil {
		t.Fatalf("put file: %v\n%s", err, out)
	}
	if out, err := run(t, append([]string{"s3", "rm", "s3://fresh-bucket/data/a/2.parquet"}, common...)...); err != nil {
		t.Fatalf("rm: %v\n%s", err, out)
	}
	if _, err := run(t, append([]string{"s3", "rm", "s3://fresh-bucket/data/"}, common...)...); err == nil || !strings.Contains(err.Error(), "names no object") {
		t.Fatalf("rm of a prefix: %v", err)
	}

	client := srv.Client()
	ctx := context.Background()
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("fresh-bucket")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, *o.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, " ") != "data/a/1.parquet data/b/3.parquet" {
		t.Fatalf("keys %v", keys)
	}
	got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fresh-bucket"), Key: aws.String("data/a/1.parquet")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	if string(body) != "three" {
		t.Fatalf("data/a/1.parquet holds %q", body)
	}
}
