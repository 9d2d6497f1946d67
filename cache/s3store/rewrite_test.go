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

package s3store

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestRewriteKeepsBytesAndChangesVersion: a rewritten object has the same bytes and a new ETag and
// LastModified, which is what makes a sync copy it again (versitygw keeps both through a plain copy
// onto itself, so Rewrite must not rely on one).
func TestRewriteKeepsBytesAndChangesVersion(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	body := bytes.Repeat([]byte("parquet "), 1000)
	srv.PutObject(t, "lake", "tpch/lineitem/part 1.parquet", body)
	ctx := context.Background()
	st, err := New(ctx, Config{Bucket: "lake", Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	describe := func() plan.Object {
		t.Helper()
		o, ok, err := st.Describe(ctx, "tpch/lineitem/part 1.parquet", "")
		if err != nil || !ok {
			t.Fatalf("describe: %v %v", ok, err)
		}
		return o
	}
	before := describe()
	time.Sleep(1100 * time.Millisecond) // LastModified has whole seconds
	if err := st.Rewrite(ctx, "tpch/lineitem/part 1.parquet", time.Now()); err != nil {
		t.Fatal(err)
	}
	after := describe()
	if after.ETag == before.ETag || !after.LastModified.After(before.LastModified) || after.Size != before.Size {
		t.Fatalf("before %+v, after %+v: want a new ETag and LastModified, the same size", before, after)
	}
	rc, _, err := st.Get(ctx, "tpch/lineitem/part 1.parquet", "", Whole)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the rewritten object's bytes changed (%d bytes, %v)", len(got), err)
	}
}
