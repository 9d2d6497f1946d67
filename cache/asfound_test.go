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
	"os"
	"path/filepath"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/s3store"
)

// A sync of a bucket that does not exist fails with its reason and leaves the target as it found it:
// no directory made, no bookkeeping in a directory that had none, a cache that existed untouched.
func TestAFailedFirstSyncLeavesTheTargetAsFound(t *testing.T) {
	e := newEnv(t)
	e.put("a.bin", []byte("the one file"))
	noBucket := func(t *testing.T, dir string) {
		t.Helper()
		st, err := s3store.New(context.Background(), s3store.Config{Bucket: "no-such-bucket", Client: e.srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		opts := e.options(st.Requests())
		opts.Dir = dir
		rep, err := cache.Sync(context.Background(), st, opts)
		if err == nil || rep.Reason != wire.ReasonNoSuchBucket {
			t.Fatalf("sync of a missing bucket: %v, reason %q", err, rep.Reason)
		}
	}

	t.Run("a directory that did not exist", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new")
		noBucket(t, dir)
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the failed sync left %s behind: %v", dir, err)
		}
	})
	t.Run("an empty directory", func(t *testing.T) {
		dir := t.TempDir()
		noBucket(t, dir)
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Fatalf("the failed sync left %v in %s (%v)", entries, dir, err)
		}
	})
	t.Run("a cache that exists", func(t *testing.T) {
		e.mustSync(nil)
		meta := func() []os.DirEntry {
			entries, err := os.ReadDir(filepath.Join(e.dir, manifest.Dir))
			if err != nil {
				t.Fatal(err)
			}
			return entries
		}
		before := len(meta())
		noBucket(t, e.dir)
		e.expectFile("a.bin", []byte("the one file"))
		if after := len(meta()); after != before {
			t.Fatalf("the cache's bookkeeping had %d entries, then %d", before, after)
		}
		if r, err := cache.Verify(e.dir); err != nil || !r.OK() {
			t.Fatalf("the cache no longer verifies: %+v %v", r, err)
		}
	})
}
