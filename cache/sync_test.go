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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

func TestFullThenIncrementalSync(t *testing.T) {
	e := newEnv(t)
	files := map[string][]byte{
		"lineitem/1/part.parquet": testfiles.Parquet(t, 20_000, 8_000, 1),
		"lineitem/2/part.parquet": testfiles.Parquet(t, 20_000, 8_000, 2),
		"orders/1/part.parquet":   testfiles.Parquet(t, 5_000, 5_000, 3),
		"nation.parquet":          testfiles.Parquet(t, 25, 25, 4),
		"notes/same-size.bin":     testfiles.Random(4096, 1),
	}
	for k, v := range files {
		e.put(k, v)
	}
	e.put("lineitem/_SUCCESS", nil)

	rep := e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/_SUCCESS"} })
	if rep.FilesCopied != 5 || rep.FilesDeleted != 0 || rep.FilesUnchanged != 0 || rep.Result != wire.ResultSucceeded {
		t.Fatalf("full sync: %+v", rep)
	}
	for k, v := range files {
		e.expectFile(k, v)
	}
	e.expectAbsent("lineitem/_SUCCESS")
	if rep.Manifest.Files != 5 || rep.Manifest.Generation != 1 || !strings.HasPrefix(rep.Manifest.Digest, "sha256:") {
		t.Fatalf("manifest summary: %+v", rep.Manifest)
	}
	if rep.Layout.ParquetFiles != 4 || rep.Layout.RowGroups != 3+3+1+1 || rep.Layout.MinRowsPerGroup != 25 {
		t.Fatalf("layout: %+v", rep.Layout)
	}
	e.expectVerified()

	// Unchanged: one LIST, no GET, no HEAD, same generation and digest.
	again := e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/_SUCCESS"} })
	if again.FilesCopied != 0 || again.FilesUnchanged != 5 || again.Requests.Get != 0 || again.Requests.Head != 0 || again.Requests.List != 1 {
		t.Fatalf("unchanged re-sync: copied %d, unchanged %d, requests %+v", again.FilesCopied, again.FilesUnchanged, again.Requests)
	}
	if again.Manifest != rep.Manifest {
		t.Fatalf("an unchanged sync moved the manifest: %+v -> %+v", rep.Manifest, again.Manifest)
	}

	// Add one, delete one, rewrite one with the same size, rewrite one and move its LastModified back.
	added := testfiles.Parquet(t, 1000, 1000, 9)
	e.put("orders/2/part.parquet", added)
	e.remove("lineitem/2/part.parquet")
	sameSize := testfiles.Random(4096, 2)
	e.put("notes/same-size.bin", sameSize)
	older := testfiles.Parquet(t, 25, 25, 5)
	e.put("nation.parquet", older)
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(e.srv.Root, "data", "tpch", "nation.parquet"), past, past); err != nil {
		t.Fatal(err)
	}

	inc := e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/_SUCCESS"} })
	if inc.FilesCopied != 3 || inc.FilesDeleted != 1 || inc.FilesUnchanged != 2 {
		t.Fatalf("incremental sync: copied %d deleted %d unchanged %d", inc.FilesCopied, inc.FilesDeleted, inc.FilesUnchanged)
	}
	if inc.Requests.Get != 3 {
		t.Fatalf("incremental sync sent %d GETs, want one per changed file (3)", inc.Requests.Get)
	}
	e.expectFile("orders/2/part.parquet", added)
	e.expectFile("notes/same-size.bin", sameSize)
	e.expectFile("nation.parquet", older)
	e.expectAbsent("lineitem/2/part.parquet")
	e.expectAbsent("lineitem/2") // emptied directories go too
	if inc.Manifest.Generation != 2 || inc.Manifest.Digest == rep.Manifest.Digest {
		t.Fatalf("manifest after changes: %+v", inc.Manifest)
	}
	e.expectVerified()

	// ETag-only change: same bytes, size and LastModified, a new ETag (versitygw keeps it in an xattr).
	orders := filepath.Join(e.srv.Root, "data", "tpch", "orders", "1", "part.parquet")
	before, err := os.Stat(orders)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(orders, "user.etag", []byte(`"00000000000000000000000000000001"`), 0); err != nil {
		t.Fatalf("setting the stored ETag: %v", err)
	}
	if after, _ := os.Stat(orders); !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("changing the ETag moved the modification time; the case would not be ETag-only")
	}
	etagOnly := e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/_SUCCESS"} })
	if etagOnly.FilesCopied != 1 || etagOnly.Requests.Get != 1 {
		t.Fatalf("ETag-only change: copied %d with %d GETs, want 1 and 1", etagOnly.FilesCopied, etagOnly.Requests.Get)
	}
	e.expectVerified()

	// --no-delete keeps files whose objects vanished.
	e.remove("orders/2/part.parquet")
	kept := e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/_SUCCESS"}; o.Prune = false })
	if kept.FilesDeleted != 0 {
		t.Fatalf("prune off deleted %d files", kept.FilesDeleted)
	}
	e.expectFile("orders/2/part.parquet", added)
}

func TestDryRunChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 1))
	e.put("b.bin", testfiles.Random(1000, 1))
	var planned []string
	rep := e.mustSync(func(o *cache.Options) {
		o.DryRun = true
		o.OnPlan = func(a plan.Action) { planned = append(planned, a.Object.Key) }
	})
	if rep.Plan.Copies != 2 || rep.Plan.CopyBytes == 0 || rep.Requests.Get != 0 || !slices.Equal(planned, []string{"a.parquet", "b.bin"}) {
		t.Fatalf("dry run: %+v, planned %v", rep, planned)
	}
	if _, err := os.Stat(e.dir); err == nil {
		entries, _ := os.ReadDir(e.dir)
		if len(entries) != 0 {
			t.Fatalf("dry run wrote into the cache: %v", entries)
		}
	}
}

func TestIncludeExclude(t *testing.T) {
	e := newEnv(t)
	e.put("lineitem/1/part.parquet", testfiles.Parquet(t, 10, 10, 1))
	e.put("lineitem/1/part.crc", []byte("crc"))
	e.put("orders/1/part.parquet", testfiles.Parquet(t, 10, 10, 2))
	rep := e.mustSync(func(o *cache.Options) { o.Include = []string{"lineitem/**"}; o.Exclude = []string{"**/*.crc"} })
	if rep.FilesCopied != 1 {
		t.Fatalf("copied %d, want 1", rep.FilesCopied)
	}
	e.expectAbsent("lineitem/1/part.crc")
	e.expectAbsent("orders/1/part.parquet")
	// Narrowing the include later removes what no longer matches.
	rep = e.mustSync(func(o *cache.Options) { o.Include = []string{"orders/**"} })
	if rep.FilesCopied != 1 || rep.FilesDeleted != 1 {
		t.Fatalf("after changing include: copied %d deleted %d", rep.FilesCopied, rep.FilesDeleted)
	}
	e.expectAbsent("lineitem/1/part.parquet")
}

func TestPaginationAndMultipartDownload(t *testing.T) {
	e := newEnv(t)
	const n = 1010 // more than one ListObjectsV2 page of 1,000
	for i := range n {
		e.put(fmt.Sprintf("small/%04d.bin", i), []byte(fmt.Sprintf("object %d", i)))
	}
	big := testfiles.Random(9*(1<<20)+12345, 7) // > 8 parts of 1 MiB
	e.put("big/blob.bin", big)
	bigParquet := testfiles.Parquet(t, 200_000, 50_000, 8)
	e.put("big/table.parquet", bigParquet)

	rep := e.mustSync(func(o *cache.Options) { o.PartSize = 1 << 20; o.Parallelism = 8 })
	if rep.FilesCopied != n+2 {
		t.Fatalf("copied %d, want %d", rep.FilesCopied, n+2)
	}
	if rep.Requests.List != 2 {
		t.Fatalf("listing took %d requests, want 2 pages", rep.Requests.List)
	}
	wantGets := int64(n) + 10 + (int64(len(bigParquet))+(1<<20)-1)/(1<<20)
	if rep.Requests.Get != wantGets {
		t.Fatalf("%d GETs, want %d (one per small object, one per 1 MiB part)", rep.Requests.Get, wantGets)
	}
	e.expectFile("big/blob.bin", big)
	e.expectFile("big/table.parquet", bigParquet)
	e.expectFile("small/1009.bin", []byte("object 1009"))
	e.expectVerified()
}

func TestHostileKeysAreRefusedAndTheRestSyncs(t *testing.T) {
	e := newEnv(t)
	e.put("good.bin", []byte("good"))
	// A key that is also a directory of another ("dir/file" and "dir/file/child") cannot be stored
	// by versitygw, whose objects are files; plan.ConflictTracker's unit test covers it.
	e.put(".pqcache/manifest.db", []byte("not a manifest"))
	e.put(`a\..\b`, []byte("a backslash path, which Windows tools read as a/../b"))

	rep, err := e.sync(nil)
	if !errors.Is(err, cache.ErrFilesFailed) {
		t.Fatalf("sync returned %v, want ErrFilesFailed", err)
	}
	if rep.Reason != wire.ReasonHostileKeys || rep.FilesCopied != 1 || rep.FilesFailed != 2 {
		t.Fatalf("report: reason %q copied %d failed %d: %+v", rep.Reason, rep.FilesCopied, rep.FilesFailed, rep.Failed)
	}
	var failed []string
	for _, f := range rep.Failed {
		failed = append(failed, f.Key)
		if !strings.Contains(f.Error, strconv.Quote(f.Key)) {
			t.Errorf("error for %q does not name the key: %s", f.Key, f.Error)
		}
	}
	slices.Sort(failed)
	if want := []string{".pqcache/manifest.db", `a\..\b`}; !slices.Equal(failed, want) {
		t.Fatalf("failed keys %v, want %v", failed, want)
	}
	e.expectFile("good.bin", []byte("good"))
	e.expectVerified()
}

// rewriteOnGet rewrites an object in the store just before the sync's first GET of it, as a writer
// racing the sync would.
type rewriteOnGet struct {
	cache.Store
	key     string
	rewrite func()
	once    sync.Once
}

func (r *rewriteOnGet) Get(ctx context.Context, key, etag string, rng s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	if key == r.key {
		r.once.Do(r.rewrite)
	}
	return r.Store.Get(ctx, key, etag, rng)
}

func TestObjectRewrittenBetweenListAndGet(t *testing.T) {
	for _, multipart := range []bool{false, true} {
		t.Run(fmt.Sprintf("multipart=%v", multipart), func(t *testing.T) {
			e := newEnv(t)
			v1, v2 := testfiles.Random(3<<20, 1), testfiles.Random(3<<20+1, 2)
			e.put("t.bin", v1)
			st, reqs := e.store(func(s *s3store.Store) cache.Store {
				return &rewriteOnGet{Store: s, key: e.prefix + "t.bin", rewrite: func() { e.put("t.bin", v2) }}
			})
			opts := e.options(reqs)
			if multipart {
				opts.PartSize = 1 << 20
			}
			rep, err := cache.Sync(context.Background(), st, opts)
			if err != nil {
				t.Fatalf("sync: %v %+v", err, rep)
			}
			if rep.Replanned != 1 {
				t.Fatalf("replanned %d times, want 1", rep.Replanned)
			}
			e.expectFile("t.bin", v2)
			e.expectVerified()
		})
	}
}

// killAfterGets kills the server once n GETs have started.
type killAfterGets struct {
	cache.Store
	n    int64
	gets atomic.Int64
	kill func()
	once sync.Once
}

func (k *killAfterGets) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	if k.gets.Add(1) == k.n {
		k.once.Do(k.kill)
	}
	return k.Store.Get(ctx, key, etag, r)
}

func TestServerKilledMidTransferKeepsTheLastGoodCache(t *testing.T) {
	e := newEnv(t)
	v1 := testfiles.Random(8<<20, 1)
	e.put("big.bin", v1)
	e.put("small.bin", []byte("v1"))
	e.mustSync(nil)

	v2 := testfiles.Random(8<<20, 2)
	e.put("big.bin", v2)
	e.put("small.bin", []byte("v2"))
	st, reqs := e.store(func(s *s3store.Store) cache.Store {
		return &killAfterGets{Store: s, n: 3, kill: e.srv.Kill}
	})
	opts := e.options(reqs)
	opts.PartSize = 1 << 20
	opts.Parallelism = 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := cache.Sync(ctx, st, opts)
	if err == nil {
		t.Fatalf("sync against a dead server succeeded: %+v", rep)
	}
	e.expectFile("big.bin", v1)
	e.expectVerified()
	// Only the large file's partial download may stay, to be resumed.
	for _, f := range e.stagedFiles() {
		if !strings.HasPrefix(f, "resume/") {
			t.Errorf("staging file left after a failed sync: %s", f)
		}
	}

	e.srv.Restart(t)
	rep = e.mustSync(nil)
	if rep.FilesCopied < 1 || rep.FilesFailed != 0 {
		t.Fatalf("after restart: %+v", rep)
	}
	e.expectFile("big.bin", v2)
	e.expectFile("small.bin", []byte("v2"))
	e.expectVerified()
	if staged := e.stagedFiles(); len(staged) != 0 {
		t.Errorf("staging files left after a clean run: %v", staged)
	}
}

// TestTruncatedObjectIsNotPublished cuts an object behind the server's back. Fetched whole, the
// store's checksum (CRC64NVME on versitygw) catches it; fetched in ranges, the size the store sends
// (or the combined CRC64NVME) does.
func TestTruncatedObjectIsNotPublished(t *testing.T) {
	cases := []struct {
		key, wantErr string
		partSize     int64
	}{
		{"t.parquet", "checksum:CRC64NVME is", 0},
		{"t.bin", "checksum:CRC64NVME is", 0},
		{"t.parquet", "verification failed", 16 << 10},
		{"t.bin", "verification failed", 16 << 10},
	}
	for _, tc := range cases {
		key := tc.key
		t.Run(fmt.Sprintf("%s/partSize=%d", key, tc.partSize), func(t *testing.T) {
			e := newEnv(t)
			var v1, v2 []byte
			if strings.HasSuffix(key, ".parquet") {
				v1, v2 = testfiles.Parquet(t, 5000, 1000, 1), testfiles.Parquet(t, 5000, 1000, 2)
			} else {
				v1, v2 = testfiles.Random(100_000, 1), testfiles.Random(100_000, 2)
			}
			e.put(key, v1)
			e.mustSync(nil)
			e.put(key, v2)
			// Cut the stored object behind the server's back: its listing still carries the ETag of the
			// whole content, and a Parquet file loses its footer.
			if err := os.Truncate(filepath.Join(e.srv.Root, "data", "tpch", key), int64(len(v2)/2)); err != nil {
				t.Fatal(err)
			}
			rep, err := e.sync(func(o *cache.Options) { o.PartSize = tc.partSize })
			if err == nil || rep.FilesFailed != 1 {
				t.Fatalf("truncated object: err %v, report %+v", err, rep)
			}
			if !strings.Contains(rep.Failed[0].Error, tc.wantErr) {
				t.Fatalf("failure does not say %q: %s", tc.wantErr, rep.Failed[0].Error)
			}
			e.expectFile(key, v1)
			e.expectVerified()
		})
	}
}

func TestVerifyCatchesAFlippedByte(t *testing.T) {
	e := newEnv(t)
	e.put("a.bin", testfiles.Random(10_000, 1))
	e.put("b.bin", testfiles.Random(10_000, 2))
	e.mustSync(nil)
	e.expectVerified()

	p := filepath.Join(e.dir, "a.bin")
	data, _ := os.ReadFile(p)
	data[5000] ^= 0x01
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "stray.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, "b.bin")); err != nil {
		t.Fatal(err)
	}
	r, err := cache.Verify(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mismatched != 1 || r.Missing != 1 || r.Extra != 1 || r.OK() {
		t.Fatalf("verify: %+v", r)
	}
}

func TestStageSyncsOnlyItsPrefixes(t *testing.T) {
	e := newEnv(t)
	e.put("lineitem/1/part.parquet", testfiles.Parquet(t, 100, 100, 1))
	e.put("orders/1/part.parquet", testfiles.Parquet(t, 100, 100, 2))
	rep := e.mustSync(func(o *cache.Options) { o.SubPrefixes = []string{"lineitem/"} })
	if rep.FilesCopied != 1 || rep.Requests.List != 1 {
		t.Fatalf("stage: %+v", rep)
	}
	e.expectAbsent("orders/1/part.parquet")
	// Nothing changed: staging again costs one LIST and no GET.
	rep = e.mustSync(func(o *cache.Options) { o.SubPrefixes = []string{"lineitem/"} })
	if rep.FilesCopied != 0 || rep.Requests.Get != 0 || rep.Requests.List != 1 {
		t.Fatalf("unchanged stage: %+v", rep)
	}
	// A full sync then copies the rest without touching lineitem.
	rep = e.mustSync(nil)
	if rep.FilesCopied != 1 || rep.FilesUnchanged != 1 {
		t.Fatalf("sync after stage: %+v", rep)
	}
}

// TestEphemeralSkipsDurability: a stage into scratch space flushes nothing, and publishes the same
// complete, verified files as a durable one.
func TestEphemeralSkipsDurability(t *testing.T) {
	e := newEnv(t)
	for i := range 50 {
		e.put(fmt.Sprintf("fresh/%02d.bin", i), testfiles.Random(10_000, uint64(i)))
	}
	e.put("big.bin", testfiles.Random(3<<20, 99))
	before := cache.Flushes()
	rep := e.mustSync(func(o *cache.Options) { o.Ephemeral = true; o.PartSize = 1 << 20 })
	if n := cache.Flushes() - before; n != 0 || rep.FilesCopied != 51 {
		t.Fatalf("ephemeral sync: %d flushes, %d copied", n, rep.FilesCopied)
	}
	e.expectFile("big.bin", testfiles.Random(3<<20, 99))
	e.expectVerified()
	e.put("fresh/00.bin", testfiles.Random(10_000, 1000))
	before = cache.Flushes()
	e.mustSync(nil)
	if cache.Flushes() == before {
		t.Fatal("a durable sync flushed nothing")
	}
}

// TestGenerationAtLeast: a sync told the newest generation other copies hold (a seed whose disk was
// wiped) numbers its next generation above it; an unchanged sync after it makes no new one.
func TestGenerationAtLeast(t *testing.T) {
	e := newEnv(t)
	e.put("a.parquet", testfiles.Parquet(t, 10, 10, 1))
	rep := e.mustSync(func(o *cache.Options) { o.GenerationAtLeast = 7 })
	if rep.Manifest.Generation != 8 {
		t.Fatalf("first generation %d, want 8: above the 7 other copies hold", rep.Manifest.Generation)
	}
	if again := e.mustSync(func(o *cache.Options) { o.GenerationAtLeast = 8 }); again.Manifest.Generation != 8 {
		t.Errorf("an unchanged sync made generation %d, want 8 still", again.Manifest.Generation)
	}
}
