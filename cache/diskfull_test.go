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
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// fillOnFirstGet fills the volume just before the first GET, as another writer on the same volume
// would after the sync checked the space. The file being fetched has its space reserved already; the
// next one does not.
type fillOnFirstGet struct {
	cache.Store
	path string
	once sync.Once
}

func (f *fillOnFirstGet) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	f.once.Do(func() {
		w, err := os.Create(f.path)
		if err != nil {
			panic(err)
		}
		defer w.Close()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the disk is full
			}
		}
	})
	return f.Store.Get(ctx, key, etag, r)
}

// TestDiskFullKeepsTheLastGoodCache syncs into a 6 MiB tmpfs. A change that needs more room than is
// free is refused before any download, with the numbers; a volume that fills up during the sync stops
// it. Both report InsufficientCapacity and leave the previous files whole and verified.
func TestDiskFullKeepsTheLastGoodCache(t *testing.T) {
	e := newEnv(t)
	e.dir = filepath.Join(testfiles.SmallDisk(t, "6m"), "cache")
	v1 := map[string][]byte{"a.bin": testfiles.Random(1<<20, 1), "b.bin": testfiles.Random(1<<20, 2), "c.bin": testfiles.Random(1<<20, 3)}
	for k, v := range v1 {
		e.put(k, v)
	}
	e.mustSync(nil)
	check := func(rep *wire.SyncReport, err error, mayHavePublished map[string][]byte) {
		t.Helper()
		if err == nil {
			t.Fatalf("a sync that cannot fit succeeded: %+v", rep)
		}
		if rep.Reason != wire.ReasonInsufficientCapacity {
			t.Fatalf("reason %q, want %s: %v", rep.Reason, wire.ReasonInsufficientCapacity, err)
		}
		for k, v := range v1 {
			if got, _ := os.ReadFile(filepath.Join(e.dir, k)); !bytes.Equal(got, v) && !bytes.Equal(got, mayHavePublished[k]) {
				t.Fatalf("%s is neither its previous version nor a complete new one", k)
			}
		}
		e.expectVerified()
		if staged := e.stagedFiles(); len(staged) != 0 {
			t.Fatalf("staging files left on a full disk: %v", staged)
		}
	}

	{ // refused before downloading
		e.put("a.bin", testfiles.Random(4<<20, 4)) // 4 MiB more while the old 1 MiB is still published
		rep, err := e.sync(nil)
		check(rep, err, nil)
		if rep.Space == nil || rep.Space.NeedBytes != 4<<20 || rep.Space.FreeBytes >= rep.Space.NeedBytes {
			t.Fatalf("the report does not say how much room was needed: %+v", rep.Space)
		}
		if rep.Requests.Get != 0 || !strings.Contains(rep.Message, "must copy 4194304 bytes") {
			t.Fatalf("the refusal should come before any GET and give the numbers: %d GETs, %q", rep.Requests.Get, rep.Message)
		}
	}
	{ // the volume fills up during the sync
		a2 := testfiles.Random(3<<19, 5)
		e.put("a.bin", a2) // 1.5 MiB + 1 MiB fit the ~3 MiB free, until someone else fills the volume
		e.put("d.bin", testfiles.Random(1<<20, 6))
		st, reqs := e.store(func(s *s3store.Store) cache.Store {
			return &fillOnFirstGet{Store: s, path: filepath.Join(filepath.Dir(e.dir), "filler")}
		})
		opts := e.options(reqs)
		opts.Parallelism = 1
		rep, err := cache.Sync(context.Background(), st, opts)
		check(rep, err, map[string][]byte{"a.bin": a2})
		e.expectAbsent("d.bin")
	}
}
