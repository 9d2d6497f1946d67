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

package enginetest

// Data in a bucket of a real S3 server (test/s3test), read as a BenchRun's Job reads it.

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// PutTree puts every Parquet file under dir into bucket of srv, under prefix.
func PutTree(t *testing.T, srv *s3test.Server, bucket, prefix, dir string) {
	t.Helper()
	tree := os.DirFS(dir)
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		body, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		srv.PutObject(t, bucket, prefix+p, body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// InBucket is r with its files under dir read from url instead (s3://bucket/prefix, where PutTree
// put them): all of them, or those under the given prefixes (relative to dir), as a mixed-direct
// input reads its fresh partitions from the bucket and the rest from the volume.
func InBucket(r *workload.Resolved, dir, url string, s3 wire.S3Access, prefixes ...string) *workload.Resolved {
	out := *r
	out.S3 = &s3
	out.Tables = map[string]workload.ResolvedTable{}
	for name, table := range r.Tables {
		files := make([]string, len(table.Files))
		for i, f := range table.Files {
			files[i] = f
			rel, err := filepath.Rel(dir, f)
			if err != nil {
				continue
			}
			rel = filepath.ToSlash(rel)
			if len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(rel, p) }) {
				files[i] = strings.TrimSuffix(url, "/") + "/" + rel
			}
		}
		table.Files = files
		out.Tables[name] = table
	}
	return &out
}

// WithCredentials gives the query processes the test server's keys, as a BenchRun's Job has them,
// and nothing else of the machine's S3 environment.
func WithCredentials(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_CA_BUNDLE", "")
}
