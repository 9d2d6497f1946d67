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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/test/testfiles"
)

// TestSyncsPublishWholeGenerations syncs with generations on: each sync that changes something
// publishes a tree of exactly the manifest's files; a reader holding an older generation keeps
// reading it, unchanged, while later syncs rewrite and delete its files on the stable path; the keep
// policy removes what nobody holds or pins; an unchanged sync keeps the current one.
func TestSyncsPublishWholeGenerations(t *testing.T) {
	e := newEnv(t)
	a1, b := testfiles.Parquet(t, 200, 100, 1), testfiles.Parquet(t, 200, 100, 2)
	e.put("t/a.parquet", a1)
	e.put("t/b.parquet", b)
	policy := func(pinned ...int64) func(*cache.Options) {
		return func(o *cache.Options) { o.Generations = &generations.Policy{Keep: 1, Pinned: pinned} }
	}
	rep := e.mustSync(policy())
	if g := rep.Generations; g == nil || g.Current != 1 || len(g.Kept) != 1 || g.Kept[0].Files != 2 || g.Kept[0].Bytes != int64(len(a1)+len(b)) {
		t.Fatalf("generations after the first sync: %+v", rep.Generations)
	}
	lease, err := generations.Hold(e.dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if lease.Generation != 1 {
		t.Fatalf("held generation %d, want 1", lease.Generation)
	}

	// Generation 2 rewrites a and deletes b, while a reader holds generation 1.
	a2 := testfiles.Parquet(t, 300, 100, 3)
	e.put("t/a.parquet", a2)
	e.remove("t/b.parquet")
	rep = e.mustSync(policy())
	if g := rep.Generations; g == nil || g.Current != 2 || len(g.Kept) != 2 || g.ExtraBytes != int64(len(a1)+len(b)) {
		t.Fatalf("generations after the second sync (generation 1 held): %+v", rep.Generations)
	}
	read := func(dir, key string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			t.Fatalf("reading %s in %s: %v", key, dir, err)
		}
		return data
	}
	if !bytes.Equal(read(lease.Dir, "t/a.parquet"), a1) || !bytes.Equal(read(lease.Dir, "t/b.parquet"), b) {
		t.Fatal("the held generation changed under its reader")
	}
	current := filepath.Join(e.dir, generations.Dir, "current")
	if !bytes.Equal(read(current, "t/a.parquet"), a2) {
		t.Fatal("current does not show the new generation")
	}
	if _, err := os.Stat(filepath.Join(current, "t/b.parquet")); !os.IsNotExist(err) {
		t.Fatalf("the deleted file is in the new generation: %v", err)
	}

	// Released and not pinned, generation 1 goes at the next sync; an unchanged sync keeps 2.
	lease.Release()
	rep = e.mustSync(policy())
	if g := rep.Generations; g == nil || g.Current != 2 || len(g.Kept) != 1 || g.ExtraBytes != 0 || rep.Requests.Get != 0 {
		t.Fatalf("an unchanged sync: generations %+v, %d GET", rep.Generations, rep.Requests.Get)
	}
	if _, err := os.Stat(filepath.Join(e.dir, generations.Dir, "1")); !os.IsNotExist(err) {
		t.Fatalf("generation 1 is still there: %v", err)
	}

	// A pinned generation survives the policy.
	e.put("t/c.parquet", b)
	rep = e.mustSync(policy(2))
	if g := rep.Generations; g == nil || g.Current != 3 || len(g.Kept) != 2 || !g.Kept[1].Pinned || g.Kept[1].Generation != 2 {
		t.Fatalf("with generation 2 pinned: %+v", rep.Generations)
	}
	e.expectVerified()
}

// TestALostManifestNeverReusesAnOldTree deletes the manifest (as a person clearing a corrupt one
// might): the next sync starts at generation 1 again, and its tree must hold today's files, not those
// of the old generation 1 still on the volume.
func TestALostManifestNeverReusesAnOldTree(t *testing.T) {
	e := newEnv(t)
	old, now := testfiles.Parquet(t, 100, 100, 1), testfiles.Parquet(t, 100, 100, 2)
	e.put("a.parquet", old)
	keep := func(o *cache.Options) { o.Generations = &generations.Policy{Keep: 2} }
	e.mustSync(keep)
	e.put("a.parquet", now)
	if err := os.Remove(filepath.Join(e.dir, ".pqcache", "manifest.db")); err != nil {
		t.Fatal(err)
	}
	// A reader holds the old generation 1 meanwhile: it must keep reading what it held.
	lease, err := generations.Hold(e.dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	rep := e.mustSync(keep)
	if rep.Manifest.Generation != 2 {
		t.Fatalf("generation %d after the manifest was lost, want 2 (never 1 again)", rep.Manifest.Generation)
	}
	got, err := os.ReadFile(filepath.Join(e.dir, generations.Dir, "current", "a.parquet"))
	if err != nil || !bytes.Equal(got, now) {
		t.Fatalf("the current generation after the manifest was lost holds the old file (err %v)", err)
	}
	if held, err := os.ReadFile(filepath.Join(lease.Dir, "a.parquet")); err != nil || !bytes.Equal(held, old) {
		t.Fatalf("the held generation 1 changed under its reader (err %v)", err)
	}
}

// TestTurningGenerationsOffRemovesThem syncs with generations, then without: current goes (no reader
// keeps reading a generation that no longer moves), and so do the trees no reader holds.
func TestTurningGenerationsOffRemovesThem(t *testing.T) {
	e := newEnv(t)
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 1))
	e.mustSync(func(o *cache.Options) { o.Generations = &generations.Policy{Keep: 2} })
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 2))
	e.mustSync(func(o *cache.Options) { o.Generations = &generations.Policy{Keep: 2} })
	lease, err := generations.Hold(e.dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	e.mustSync(nil)
	gens := filepath.Join(e.dir, generations.Dir)
	if _, err := os.Lstat(filepath.Join(gens, "current")); !os.IsNotExist(err) {
		t.Fatalf("current is still there with generations off: %v", err)
	}
	if _, err := os.Stat(filepath.Join(gens, "1")); !os.IsNotExist(err) {
		t.Fatalf("generation 1, held by nobody, is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(gens, "2")); err != nil {
		t.Fatalf("generation 2, held by a reader, is gone: %v", err)
	}
	lease.Release()
	e.mustSync(nil)
	if _, err := os.Stat(filepath.Join(gens, "2")); !os.IsNotExist(err) {
		t.Fatalf("generation 2 is still there once released: %v", err)
	}
	e.expectVerified()
}

// TestAFileRemovedByHandIsCopiedAgain removes a published file behind the manifest's back: the
// generation cannot be built, the sync says why, and the next one copies the file again.
func TestAFileRemovedByHandIsCopiedAgain(t *testing.T) {
	e := newEnv(t)
	a, b := testfiles.Parquet(t, 100, 100, 1), testfiles.Parquet(t, 100, 100, 2)
	e.put("a.parquet", a)
	e.put("b.parquet", b)
	keep := func(o *cache.Options) { o.Generations = &generations.Policy{Keep: 2} }
	e.mustSync(keep)
	if err := os.Remove(filepath.Join(e.dir, "b.parquet")); err != nil {
		t.Fatal(err)
	}
	e.put("a.parquet", testfiles.Parquet(t, 100, 100, 3)) // a change, so that a new generation is built
	_, err := e.sync(keep)
	if err == nil || !strings.Contains(err.Error(), "missing from the volume") {
		t.Fatalf("sync with a published file removed by hand: %v", err)
	}
	rep := e.mustSync(keep)
	if rep.FilesCopied != 1 {
		t.Fatalf("the next sync copied %d files, want 1 (the removed one)", rep.FilesCopied)
	}
	e.expectFile("b.parquet", b)
	if got, err := os.ReadFile(filepath.Join(e.dir, generations.Dir, "current", "b.parquet")); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the current generation lacks the file copied again: %v", err)
	}
	e.expectVerified()
}
