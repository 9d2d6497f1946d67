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
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/test/testfiles"
)

// etagOf is the ETag versitygw gives a single-part object: its MD5, quoted.
func (e *env) etagOf(key string) string {
	e.t.Helper()
	st, _ := e.store()
	obj, ok, err := st.Describe(e.t.Context(), e.prefix+key, e.prefix)
	if err != nil || !ok {
		e.t.Fatalf("describing %s: ok=%v err=%v", key, ok, err)
	}
	return obj.ETag
}

func created(e *env, key, etag string) wire.Change {
	return wire.Change{Key: e.prefix + key, ETag: etag, EventTime: time.Now().Add(-time.Second)}
}

func removed(e *env, key string) wire.Change {
	return wire.Change{Key: e.prefix + key, Removed: true, EventTime: time.Now().Add(-time.Second)}
}

func targeted(changes ...wire.Change) func(*cache.Options) {
	return func(o *cache.Options) { o.Changes = &wire.ChangeSet{Changes: changes} }
}

func TestTargetedSyncAppliesJustTheNamedKeysWithoutListing(t *testing.T) {
	e := newEnv(t)
	a1, b, c := testfiles.Parquet(t, 500, 100, 1), testfiles.Parquet(t, 500, 100, 2), testfiles.Parquet(t, 500, 100, 3)
	e.put("orders/a.parquet", a1)
	e.put("orders/b.parquet", b)
	e.put("orders/c.parquet", c)
	e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/*.tmp"} })

	// The bucket changes: a rewritten, b removed, d new; e is new too but no event names it.
	a2, d, unnamed := testfiles.Parquet(t, 500, 100, 11), testfiles.Parquet(t, 600, 100, 4), testfiles.Parquet(t, 100, 100, 5)
	e.put("orders/a.parquet", a2)
	e.remove("orders/b.parquet")
	e.put("orders/d.parquet", d)
	e.put("orders/e.parquet", unnamed)
	e.srv.PutObject(t, e.bucket, "elsewhere/x.parquet", d)
	e.put("orders/scratch.tmp", []byte("excluded"))

	st, reqs := e.store()
	opts := e.options(reqs)
	opts.Exclude = []string{"**/*.tmp"}
	opts.Changes = &wire.ChangeSet{Changes: []wire.Change{
		created(e, "orders/a.parquet", e.etagOf("orders/a.parquet")),
		removed(e, "orders/b.parquet"),
		created(e, "orders/d.parquet", e.etagOf("orders/d.parquet")),
		{Key: "elsewhere/x.parquet"},         // outside the prefix
		created(e, "orders/scratch.tmp", ""), // excluded by a glob
		created(e, "orders/c.parquet", ""),   // a duplicate of an event already applied: c is as the bucket has it
		{Key: e.prefix + "orders/", Size: 0}, // a directory marker
	}}
	rep, err := cache.Sync(t.Context(), st, opts)
	if err != nil {
		t.Fatalf("targeted sync: %v (%+v)", err, rep)
	}
	if reqs.List.Load() != 0 {
		t.Errorf("a targeted sync listed the prefix: %d LIST requests", reqs.List.Load())
	}
	if got := reqs.Get.Load(); got != 2 {
		t.Errorf("GET requests = %d, want 2 (a and d)", got)
	}
	if got := reqs.Head.Load(); got != 4 {
		t.Errorf("HEAD requests = %d, want 4 (one per key in scope)", got)
	}
	e.expectFile("orders/a.parquet", a2)
	e.expectFile("orders/c.parquet", c)
	e.expectFile("orders/d.parquet", d)
	e.expectAbsent("orders/b.parquet")
	e.expectAbsent("orders/e.parquet")
	e.expectAbsent("orders/scratch.tmp")
	e.expectVerified()
	if rep.FilesCopied != 2 || rep.FilesDeleted != 1 || rep.FilesUnchanged != 1 {
		t.Errorf("copied %d, deleted %d, unchanged %d; want 2, 1, 1", rep.FilesCopied, rep.FilesDeleted, rep.FilesUnchanged)
	}
	out := rep.Changes
	if out == nil || out.Applied != 4 || out.Ignored != 3 || out.Stale != 0 {
		t.Fatalf("outcome %+v, want 4 applied, 3 ignored, 0 stale", out)
	}
	if out.PublishedAt.IsZero() || out.OldestEventTime.IsZero() || out.PublishedAt.Before(out.OldestEventTime) {
		t.Errorf("outcome times: published %v, oldest event %v", out.PublishedAt, out.OldestEventTime)
	}
	if rep.Manifest.Files != 3 || rep.Manifest.Generation != 2 {
		t.Errorf("manifest %+v, want 3 files at generation 2", rep.Manifest)
	}

	// The safety-net listing finds only what no event named, and does not copy again what the
	// targeted sync published from its HEADs (whose times have whole seconds).
	rep = e.mustSync(func(o *cache.Options) { o.Exclude = []string{"**/*.tmp"} })
	if rep.FilesCopied != 1 || rep.FilesUnchanged != 3 || rep.Requests.Get != 1 {
		t.Fatalf("listing after the targeted sync: copied %d, unchanged %d, %d GET; want 1 (e), 3, 1", rep.FilesCopied, rep.FilesUnchanged, rep.Requests.Get)
	}
	e.expectFile("orders/e.parquet", unnamed)
}

func TestTargetedSyncTrustsTheBucketNotTheEvent(t *testing.T) {
	e := newEnv(t)
	e.put("t/keep.parquet", testfiles.Parquet(t, 100, 100, 1))
	e.put("t/gone.parquet", testfiles.Parquet(t, 100, 100, 2))
	e.mustSync(nil)

	// Events that no longer describe the bucket: a's ETag is of a version since overwritten; back was
	// removed and then written again; gone was written (the event) and then removed (no event yet);
	// never was written and removed before the sync looked.
	a1, a2, back := testfiles.Parquet(t, 100, 100, 10), testfiles.Parquet(t, 100, 100, 11), testfiles.Parquet(t, 100, 100, 12)
	e.put("t/a.parquet", a1)
	staleETag := e.etagOf("t/a.parquet")
	e.put("t/a.parquet", a2)
	e.put("t/back.parquet", back)
	e.remove("t/gone.parquet")
	rep := e.mustSync(targeted(
		created(e, "t/a.parquet", staleETag),
		removed(e, "t/back.parquet"),
		created(e, "t/gone.parquet", `"0123"`),
		created(e, "t/never.parquet", `"4567"`),
	))
	e.expectFile("t/a.parquet", a2)
	e.expectFile("t/back.parquet", back)
	e.expectAbsent("t/gone.parquet")
	e.expectAbsent("t/never.parquet")
	if out := rep.Changes; out.Stale != 4 || out.Applied != 4 {
		t.Fatalf("outcome %+v, want 4 stale (and applied: the volume now has what the bucket has)", out)
	}

	// The same change set again (a redelivered message) costs HEADs and nothing else.
	st, reqs := e.store()
	opts := e.options(reqs)
	opts.Changes = &wire.ChangeSet{Changes: []wire.Change{created(e, "t/a.parquet", staleETag), removed(e, "t/back.parquet")}}
	again, err := cache.Sync(t.Context(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if reqs.Get.Load() != 0 || again.FilesCopied != 0 || again.FilesDeleted != 0 || again.Manifest.Generation != rep.Manifest.Generation {
		t.Fatalf("a redelivered change set did work: %d GET, copied %d, deleted %d, generation %d (was %d)",
			reqs.Get.Load(), again.FilesCopied, again.FilesDeleted, again.Manifest.Generation, rep.Manifest.Generation)
	}
}

func TestTargetedSyncRespectsNoDelete(t *testing.T) {
	e := newEnv(t)
	kept := testfiles.Parquet(t, 100, 100, 1)
	e.put("k.parquet", kept)
	e.mustSync(nil)
	e.remove("k.parquet")
	rep := e.mustSync(func(o *cache.Options) { o.Prune = false; targeted(removed(e, "k.parquet"))(o) })
	e.expectFile("k.parquet", kept)
	if rep.FilesDeleted != 0 {
		t.Fatalf("deleted %d files with deletes off", rep.FilesDeleted)
	}
}

// TestNoChangeIsLostWhateverTheEvents writes 1,000 random puts, overwrites and deletes into the bucket,
// and delivers their events in batches with some dropped, some duplicated and the rest reordered, a
// targeted sync after each batch. After every sync, no file on the volume is older than a version of
// it the volume already held (versions only move forward); after the last, one listing sync (the
// safety net) leaves the volume equal to the bucket.
func TestNoChangeIsLostWhateverTheEvents(t *testing.T) {
	e := newEnv(t)
	e.prefix = "chaos/"
	rng := rand.New(rand.NewPCG(7, 7))
	const (
		ops   = 1000
		keys  = 40
		batch = 25
	)
	bucket := map[string]uint64{} // key → version the bucket holds
	content := func(key string, version uint64) []byte {
		b := make([]byte, 8, 8+rng.IntN(2048))
		binary.BigEndian.PutUint64(b, version)
		return append(b, bytes.Repeat([]byte(key), 1+rng.IntN(64))...)
	}
	versionOf := func(path string) (uint64, bool) {
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return 0, false
		}
		if err != nil || len(b) < 8 {
			t.Fatalf("reading %s: %v (%d bytes)", path, err, len(b))
		}
		return binary.BigEndian.Uint64(b), true
	}
	seen := map[string]uint64{} // key → newest version the volume held
	var (
		pending            []wire.Change
		dropped, duplicate int
		syncs              int
		version            uint64
	)
	for op := 1; op <= ops; op++ {
		key := "k" + strconv.Itoa(rng.IntN(keys)) + ".bin"
		ch := wire.Change{Key: e.prefix + key, Sequencer: fmt.Sprintf("%X", op), EventTime: time.Now()}
		if _, ok := bucket[key]; ok && rng.IntN(3) == 0 {
			e.remove(key)
			delete(bucket, key)
			ch.Removed = true
		} else {
			version++
			e.put(key, content(key, version))
			bucket[key] = version
		}
		switch rng.IntN(10) {
		case 0:
			dropped++ // lost: only the listing will find it
		case 1:
			duplicate++
			pending = append(pending, ch, ch)
		default:
			pending = append(pending, ch)
		}
		if op%batch != 0 {
			continue
		}
		// Deliver a random part of what is pending, in random order; the rest comes later.
		rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
		n := len(pending)
		if op != ops {
			n = rng.IntN(len(pending) + 1)
		}
		deliver := pending[:n]
		pending = slices.Clone(pending[n:])
		e.mustSync(targeted(deliver...))
		syncs++
		for k := range keys {
			key := "k" + strconv.Itoa(k) + ".bin"
			if v, ok := versionOf(filepath.Join(e.dir, key)); ok {
				if v < seen[key] {
					t.Fatalf("after sync %d, %s went back from version %d to %d", syncs, key, seen[key], v)
				}
				seen[key] = v
			}
		}
	}
	t.Logf("%d operations, %d targeted syncs, %d events dropped, %d duplicated", ops, syncs, dropped, duplicate)
	if dropped == 0 || duplicate == 0 {
		t.Fatal("the test dropped or duplicated no event: it proves nothing")
	}

	e.mustSync(nil) // the safety net
	for k := range keys {
		key := "k" + strconv.Itoa(k) + ".bin"
		v, ok := versionOf(filepath.Join(e.dir, key))
		want, inBucket := bucket[key]
		if ok != inBucket || v != want {
			t.Errorf("%s: volume has version %d (present %v), bucket %d (present %v)", key, v, ok, want, inBucket)
		}
	}
	e.expectVerified()
}

func TestATargetedSyncIntoANeverSyncedDirectoryLists(t *testing.T) {
	e := newEnv(t)
	a, b := testfiles.Parquet(t, 100, 100, 1), testfiles.Parquet(t, 100, 100, 2)
	e.put("a.parquet", a)
	e.put("b.parquet", b)
	st, reqs := e.store()
	opts := e.options(reqs)
	opts.Changes = &wire.ChangeSet{Changes: []wire.Change{created(e, "a.parquet", "")}}
	rep, err := cache.Sync(t.Context(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if reqs.List.Load() == 0 || rep.FilesCopied != 2 {
		t.Fatalf("a change set into an empty directory: %d LIST, %d copied; want a listing of both files", reqs.List.Load(), rep.FilesCopied)
	}
	e.expectFile("b.parquet", b)
}

func TestATargetedSyncIgnoresKeysNoSyncCanPublish(t *testing.T) {
	e := newEnv(t)
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 1))
	e.mustSync(nil)
	rep := e.mustSync(targeted(wire.Change{Key: e.prefix + ".pqcache/manifest.db"}, wire.Change{Key: e.prefix + "x//y.parquet"}))
	if rep.Changes.Ignored != 2 || rep.FilesFailed != 0 {
		t.Fatalf("hostile keys in a change set: %+v, %d failed; want both ignored and the sync whole", rep.Changes, rep.FilesFailed)
	}
}

func TestATargetedSyncKeepsANewerPublishedVersion(t *testing.T) {
	e := newEnv(t)
	newer := testfiles.Parquet(t, 100, 100, 1)
	e.put("a.parquet", newer)
	e.mustSync(nil)
	// The bucket now answers with an older object (a lagging replica): another file whose
	// LastModified is an hour before the published one.
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 2))
	backing := filepath.Join(e.srv.Root, e.bucket, e.prefix+"a.parquet")
	if err := os.Chtimes(backing, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep := e.mustSync(targeted(created(e, "a.parquet", "")))
	e.expectFile("a.parquet", newer)
	if rep.FilesCopied != 0 || rep.Changes.Stale != 1 {
		t.Fatalf("an older answer replaced a newer file: copied %d, outcome %+v", rep.FilesCopied, rep.Changes)
	}
}

// TestATargetedSyncIgnoresAKeyWhosePathIsAnotherObjects: S3 can hold "a" and "a/b" at once, a
// directory cannot; the change is ignored (the listing sync reports the pair), and the rest applies.
func TestATargetedSyncIgnoresAKeyWhosePathIsAnotherObjects(t *testing.T) {
	e := newEnv(t)
	file, other := testfiles.Parquet(t, 100, 100, 1), testfiles.Parquet(t, 100, 100, 2)
	e.put("t/a", file)
	e.mustSync(nil)
	// versitygw (posix) cannot hold both either: the bucket gets "t/a" removed and "t/a/b" written,
	// while the events name "t/a/b" alone, as if "t/a" were still there.
	e.remove("t/a")
	e.put("t/a/b", other)
	e.put("t/c.parquet", other)
	rep := e.mustSync(targeted(created(e, "t/a/b", ""), created(e, "t/c.parquet", "")))
	if rep.FilesFailed != 0 || rep.Changes.Ignored != 1 || rep.FilesCopied != 1 {
		t.Fatalf("a key under a published file: %d failed, %d copied, outcome %+v; want it ignored and c copied", rep.FilesFailed, rep.FilesCopied, rep.Changes)
	}
	e.expectFile("t/a", file)
	e.expectFile("t/c.parquet", other)
}
