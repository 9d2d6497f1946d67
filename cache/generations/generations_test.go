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

package generations

import (
	stdcmp "cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// vol is a cache directory whose stable paths change the way a sync changes them: a new file renamed
// over the old one, or an unlink, never a write in place.
type vol struct {
	t     *testing.T
	root  string
	files map[string]string // key -> contents, what the manifest would list
}

func newVol(t *testing.T, files map[string]string) *vol {
	t.Helper()
	v := &vol{t: t, root: t.TempDir(), files: map[string]string{}}
	for k, c := range files {
		v.put(k, c)
	}
	return v
}

func (v *vol) put(key, contents string) {
	v.t.Helper()
	p := filepath.Join(v.root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		v.t.Fatal(err)
	}
	tmp := filepath.Join(v.root, ".staged-"+randomSuffix())
	if err := os.WriteFile(tmp, []byte(contents), 0o644); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		v.t.Fatal(err)
	}
	v.files[key] = contents
}

func (v *vol) del(key string) {
	v.t.Helper()
	if err := os.Remove(filepath.Join(v.root, filepath.FromSlash(key))); err != nil {
		v.t.Fatal(err)
	}
	delete(v.files, key)
}

// entries walks the keys in key order, as a manifest Scan does.
func (v *vol) entries() Entries {
	keys := slices.Sorted(maps.Keys(v.files))
	return func(fn func(manifest.Entry) error) error {
		for _, k := range keys {
			if err := fn(manifest.Entry{Key: k, Size: int64(len(v.files[k])), ETag: `"` + v.files[k] + `"`}); err != nil {
				return err
			}
		}
		return nil
	}
}

func (v *vol) publish(g int64, p Policy, now time.Time) wire.GenerationSummary {
	v.t.Helper()
	sum, err := Publish(context.Background(), v.root, g, v.entries(), p, now)
	if err != nil {
		v.t.Fatalf("publishing generation %d: %v", g, err)
	}
	return sum
}

func (v *vol) gens() string { return filepath.Join(v.root, filepath.FromSlash(Dir)) }

func (v *vol) tree(g int64) string { return filepath.Join(v.gens(), strconv.FormatInt(g, 10)) }

// readTree returns every file under dir, by slash-separated path, with its contents.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	var s unix.Stat_t
	if err := unix.Lstat(p, &s); err != nil {
		t.Fatal(err)
	}
	return s.Ino
}

func generationsOf(sum wire.GenerationSummary) []int64 {
	var out []int64
	for _, k := range sum.Kept {
		out = append(out, k.Generation)
	}
	return out
}

func TestPublishBuildsAndSwitches(t *testing.T) {
	v := newVol(t, map[string]string{"a.parquet": "aaaa", "x/y/b.parquet": "bb", "x/c": "c"})
	sum := v.publish(1, Policy{Keep: 2}, t0)
	want := wire.GenerationSummary{Current: 1, Kept: []wire.GenerationInfo{{Generation: 1, Files: 3, Bytes: 7, Published: t0}}}
	if d := cmp.Diff(want, sum); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if target, err := os.Readlink(filepath.Join(v.gens(), currentLink)); err != nil || target != "1" {
		t.Errorf("current -> %q, %v; want 1", target, err)
	}
	if d := cmp.Diff(v.files, readTree(t, v.tree(1))); d != "" {
		t.Errorf("tree 1 (-want +got):\n%s", d)
	}
	if ino(t, filepath.Join(v.root, "x/y/b.parquet")) != ino(t, filepath.Join(v.tree(1), "x/y/b.parquet")) {
		t.Error("the tree does not share the stable file's inode")
	}

	first := maps.Clone(v.files)
	v.put("a.parquet", "AAAAAA")
	v.del("x/c")
	sum = v.publish(2, Policy{Keep: 2}, t0.Add(time.Hour))
	want = wire.GenerationSummary{Current: 2, ExtraBytes: 4 + 1, Kept: []wire.GenerationInfo{
		{Generation: 2, Files: 2, Bytes: 8, Published: t0.Add(time.Hour)},
		{Generation: 1, Files: 3, Bytes: 7, Published: t0},
	}}
	if d := cmp.Diff(want, sum); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if d := cmp.Diff(v.files, readTree(t, filepath.Join(v.gens(), currentLink))); d != "" {
		t.Errorf("current tree (-want +got):\n%s", d)
	}
	if d := cmp.Diff(first, readTree(t, v.tree(1))); d != "" {
		t.Errorf("tree 1 changed (-want +got):\n%s", d)
	}
	infos, cur, err := List(v.root)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.Kept, infos); d != "" || cur != 2 {
		t.Errorf("List: current %d, (-want +got):\n%s", cur, d)
	}
}

// TestObjectIndexFollowsItsTree: with Policy.Index a generation gets an object index that lists what
// the manifest said of each file; a tree published without one gets it on the next Publish that asks;
// the index goes with its tree, and one whose tree is gone (a crash between the two removals) is
// cleaned up.
func TestObjectIndexFollowsItsTree(t *testing.T) {
	v := newVol(t, map[string]string{"a.parquet": "aaaa", "x/b.parquet": "bb"})
	v.publish(1, Policy{Keep: 1}, t0)
	if _, err := Objects(v.root, 1); !errors.Is(err, ErrNotIndexed) {
		t.Fatalf("a generation published without Index: %v, want ErrNotIndexed", err)
	}
	v.publish(1, Policy{Keep: 1, Index: true}, t0)
	want := []Object{{Key: "a.parquet", Size: 4, ETag: `"aaaa"`}, {Key: "x/b.parquet", Size: 2, ETag: `"bb"`}}
	got, err := Objects(v.root, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("index of the tree that had none (-want +got):\n%s", d)
	}

	v.put("c.parquet", "ccc")
	v.publish(2, Policy{Keep: 1, Index: true}, t0.Add(time.Hour))
	got, err = Objects(v.root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Object{want[0], {Key: "c.parquet", Size: 3, ETag: `"ccc"`}, want[1]}, got); d != "" {
		t.Errorf("index of a new tree (-want +got):\n%s", d)
	}
	if _, err := Objects(v.root, 1); !errors.Is(err, ErrNotIndexed) {
		t.Errorf("the index of a removed generation: %v, want ErrNotIndexed", err)
	}

	orphan := filepath.Join(v.gens(), "7"+objectsSuffix)
	if err := os.WriteFile(orphan, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v.publish(2, Policy{Keep: 1, Index: true}, t0.Add(2*time.Hour))
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an index without its tree survived: %v", err)
	}
}

// TestHeldGenerationStaysConsistent: a reader holding generation 1 across two publishes that
// replace and delete its files still reads generation 1 whole; released, it goes.
func TestHeldGenerationStaysConsistent(t *testing.T) {
	v := newVol(t, map[string]string{"d/a": "a1", "d/b": "b1", "c": "c1"})
	v.publish(1, Policy{Keep: 1}, t0)
	snapshot := maps.Clone(v.files)
	l, err := Hold(v.root, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Generation != 1 || l.Dir != v.tree(1) {
		t.Fatalf("held %d at %s, want 1 at %s", l.Generation, l.Dir, v.tree(1))
	}

	v.put("d/a", "a2")
	v.del("d/b")
	v.publish(2, Policy{Keep: 1}, t0.Add(time.Minute))
	v.put("d/a", "a3")
	v.put("c", "c3")
	v.put("e", "e3")
	sum := v.publish(3, Policy{Keep: 1}, t0.Add(2*time.Minute))
	if d := cmp.Diff([]int64{3, 1}, generationsOf(sum)); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
	if d := cmp.Diff(snapshot, readTree(t, l.Dir)); d != "" {
		t.Errorf("held tree changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(v.files, readTree(t, v.tree(3))); d != "" {
		t.Errorf("tree 3 (-want +got):\n%s", d)
	}

	l.Release()
	l.Release()
	sum = v.publish(3, Policy{Keep: 1}, t0.Add(3*time.Minute))
	if d := cmp.Diff([]int64{3}, generationsOf(sum)); d != "" {
		t.Errorf("kept after release (-want +got):\n%s", d)
	}
	if _, err := os.Stat(v.tree(1)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("tree 1 after release: %v", err)
	}
	if _, err := Hold(v.root, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Hold(1) after removal: %v, want ErrNotExist", err)
	}
}

// TestCollect publishes generations 1..last an hour apart, then `last` again (or final) with the
// policy under test.
func TestCollect(t *testing.T) {
	hour := func(i int64) time.Time { return t0.Add(time.Duration(i) * time.Hour) }
	tests := []struct {
		name   string
		last   int64 // generations published before, an hour apart (6 when 0)
		final  int64 // the generation published with p (last when 0)
		p      Policy
		now    time.Time // when p is applied (just after `last`'s publication when zero)
		held   []int64
		want   []int64
		pinned []int64
	}{
		{name: "keep 1", p: Policy{Keep: 1}, want: []int64{6}},
		{name: "keep 0 means 1", p: Policy{}, want: []int64{6}},
		{name: "keep 3", p: Policy{Keep: 3}, want: []int64{6, 5, 4}},
		{
			// 5 was superseded 30m ago, 4 1h30m ago, 3 2h30m ago.
			name: "min age counts from supersession", p: Policy{Keep: 1, MinAge: 2*time.Hour + 29*time.Minute},
			now: hour(6).Add(30 * time.Minute), want: []int64{6, 5, 4},
		},
		{name: "max kept drops the oldest kept by age", p: Policy{Keep: 1, MinAge: 100 * time.Hour, MaxKept: 3}, want: []int64{6, 5, 4}},
		{name: "max kept caps keep", p: Policy{Keep: 10, MaxKept: 2}, want: []int64{6, 5}},
		{name: "pinned", p: Policy{Keep: 1, Pinned: []int64{2, 99}}, want: []int64{6, 2}, pinned: []int64{2}},
		{name: "pinned beyond max kept", p: Policy{Keep: 2, MaxKept: 2, MinAge: 100 * time.Hour, Pinned: []int64{1}}, want: []int64{6, 5, 1}, pinned: []int64{1}},
		{name: "held", p: Policy{Keep: 1}, held: []int64{3}, want: []int64{6, 3}},
		{
			name: "all reasons", p: Policy{Keep: 2, MinAge: 90 * time.Minute, MaxKept: 4, Pinned: []int64{1}},
			now: hour(6).Add(time.Minute), held: []int64{2}, want: []int64{6, 5, 4, 2, 1}, pinned: []int64{1},
		},
		{name: "newer than current go unless pinned", last: 8, final: 6, p: Policy{Keep: 2, Pinned: []int64{8}}, want: []int64{8, 6, 5}, pinned: []int64{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVol(t, map[string]string{"f": "0"})
			last, final := stdcmp.Or(tt.last, 6), stdcmp.Or(tt.final, tt.last, 6)
			for g := int64(1); g <= last; g++ {
				v.put("f", strconv.FormatInt(g, 10))
				v.publish(g, Policy{Keep: 100, MaxKept: 100}, hour(g))
			}
			for _, g := range tt.held {
				l, err := Hold(v.root, g)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
			}
			sum := v.publish(final, tt.p, stdcmp.Or(tt.now, hour(last).Add(time.Second)))
			if d := cmp.Diff(tt.want, generationsOf(sum)); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			var pinned []int64
			for _, k := range sum.Kept {
				if k.Pinned {
					pinned = append(pinned, k.Generation)
				}
			}
			if d := cmp.Diff(tt.pinned, pinned); d != "" {
				t.Errorf("pinned (-want +got):\n%s", d)
			}
			infos, _, err := List(v.root)
			if err != nil {
				t.Fatal(err)
			}
			var onDisk []int64
			for _, in := range infos {
				onDisk = append(onDisk, in.Generation)
				if got := readTree(t, v.tree(in.Generation))["f"]; got != strconv.FormatInt(in.Generation, 10) {
					t.Errorf("generation %d holds %q", in.Generation, got)
				}
			}
			if d := cmp.Diff(tt.want, onDisk); d != "" {
				t.Errorf("on disk (-want +got):\n%s", d)
			}
		})
	}
}

func TestHoldPath(t *testing.T) {
	v := newVol(t, map[string]string{"sub/f": "1"})
	v.publish(1, Policy{Keep: 2}, t0)
	v.put("sub/f", "2")
	v.publish(2, Policy{Keep: 2}, t0.Add(time.Hour))
	outside := t.TempDir()
	link := filepath.Join(outside, "data")
	if err := os.Symlink(filepath.Join(v.gens(), currentLink), link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		path     string
		wantGen  int64
		wantPath string
		wantErr  error
	}{
		{name: "current", path: filepath.Join(v.gens(), currentLink), wantGen: 2, wantPath: v.tree(2)},
		{name: "inside current", path: filepath.Join(v.gens(), currentLink, "sub/f"), wantGen: 2, wantPath: filepath.Join(v.tree(2), "sub/f")},
		{name: "number", path: v.tree(1), wantGen: 1, wantPath: v.tree(1)},
		{name: "inside a number", path: filepath.Join(v.tree(1), "sub") + "/", wantGen: 1, wantPath: filepath.Join(v.tree(1), "sub")},
		{name: "symlink elsewhere to current", path: link, wantGen: 2, wantPath: v.tree(2)},
		{name: "the root", path: v.root, wantPath: v.root},
		{name: "a stable file", path: filepath.Join(v.root, "sub/f"), wantPath: filepath.Join(v.root, "sub/f")},
		{name: "not a generation", path: filepath.Join(v.gens(), ".building-3"), wantPath: filepath.Join(v.gens(), ".building-3")},
		{name: "a generation not kept", path: filepath.Join(v.gens(), "7"), wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := HoldPath(tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if l.Generation != tt.wantGen || l.Path != tt.wantPath {
				t.Errorf("held %d, path %s; want %d, %s", l.Generation, l.Path, tt.wantGen, tt.wantPath)
			}
			if tt.wantGen != 0 && l.Dir != v.tree(tt.wantGen) {
				t.Errorf("Dir = %s, want %s", l.Dir, v.tree(tt.wantGen))
			}
			if tt.wantGen == 0 && l.Dir != "" {
				t.Errorf("no-op lease has Dir %s", l.Dir)
			}
		})
	}

	// A held path keeps its generation through a publish that would remove it.
	l, err := HoldPath(filepath.Join(v.gens(), currentLink))
	if err != nil {
		t.Fatal(err)
	}
	v.put("sub/f", "3")
	v.publish(3, Policy{Keep: 1}, t0.Add(2*time.Hour))
	if got := readTree(t, l.Path)["sub/f"]; got != "2" {
		t.Errorf("held generation reads %q, want 2", got)
	}
	l.Release()
}

func TestPublishCleansCrashLeftovers(t *testing.T) {
	v := newVol(t, map[string]string{"a": "1", "d/b": "2"})
	v.publish(1, Policy{Keep: 5}, t0)
	leftovers := []string{".building-2", ".building-x", ".deleting-1-abc", ".tmp-xyz", "9.json"}
	for _, name := range leftovers[:3] {
		if err := os.MkdirAll(filepath.Join(v.gens(), name, "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v.gens(), name, "d", "b"), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range leftovers[3:] {
		if err := os.WriteFile(filepath.Join(v.gens(), name), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A record torn by a crash: the tree is counted again.
	if err := os.WriteFile(filepath.Join(v.gens(), "1.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	v.put("a", "11")
	sum := v.publish(2, Policy{Keep: 5}, t0.Add(time.Hour))
	for _, name := range leftovers {
		if _, err := os.Lstat(filepath.Join(v.gens(), name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("leftover %s: %v", name, err)
		}
	}
	if d := cmp.Diff(v.files, readTree(t, v.tree(2))); d != "" {
		t.Errorf("tree 2 built over a leftover (-want +got):\n%s", d)
	}
	if k := sum.Kept[1]; k.Generation != 1 || k.Files != 2 || k.Bytes != 2 || k.Published.IsZero() {
		t.Errorf("recounted generation 1: %+v", k)
	}
}

// TestPublishUnchangedDoesNoWork: publishing a generation whose tree exists links nothing, does not
// walk the manifest, reuses the stored ExtraBytes and flushes nothing.
func TestPublishUnchangedDoesNoWork(t *testing.T) {
	v := newVol(t, map[string]string{"a": "1", "b": "22", "d/c": "333"})
	p := Policy{Keep: 2, Durable: true}
	v.publish(1, p, t0)
	v.put("b", "2222")
	links, walks, syncs := linked.Load(), extraWalks.Load(), flushes.Load()
	first := v.publish(2, p, t0.Add(time.Hour))
	if n := linked.Load() - links; n != 3 {
		t.Errorf("building generation 2 linked %d files, want 3", n)
	}
	if n := flushes.Load() - syncs; n != 2 {
		t.Errorf("a durable build flushed %d times, want 2 (before the rename, after the switch)", n)
	}
	if n := extraWalks.Load() - walks; n != 1 {
		t.Errorf("ExtraBytes walked %d times, want 1", n)
	}

	links, walks, syncs = linked.Load(), extraWalks.Load(), flushes.Load()
	called := false
	again, err := Publish(context.Background(), v.root, 2, func(func(manifest.Entry) error) error {
		called = true
		return nil
	}, p, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if called || linked.Load() != links || extraWalks.Load() != walks || flushes.Load() != syncs {
		t.Errorf("unchanged publish: entries called %v, linked %d, walked %d, flushed %d",
			called, linked.Load()-links, extraWalks.Load()-walks, flushes.Load()-syncs)
	}
	if d := cmp.Diff(first, again); d != "" || first.ExtraBytes != 2 {
		t.Errorf("ExtraBytes %d; unchanged summary (-first +again):\n%s", first.ExtraBytes, d)
	}
}

func TestPublishFailureLeavesCurrent(t *testing.T) {
	v := newVol(t, map[string]string{"a": "1"})
	v.publish(1, Policy{Keep: 1}, t0)
	tests := []struct {
		name    string
		keys    []string
		wantErr string
	}{
		{name: "missing file", keys: []string{"a", "gone"}, wantErr: "gone is in the manifest but not on the volume"},
		{name: "listed twice", keys: []string{"a", "a"}, wantErr: "listed twice"},
		{name: "escaping key", keys: []string{"../a"}, wantErr: "bad path segment"},
		{name: "reserved dir", keys: []string{".pqcache/manifest.db"}, wantErr: "reserved"},
		{name: "a directory", keys: []string{".pqcache"}, wantErr: "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Publish(context.Background(), v.root, 2, func(fn func(manifest.Entry) error) error {
				for _, k := range tt.keys {
					if err := fn(manifest.Entry{Key: k}); err != nil {
						return err
					}
				}
				return nil
			}, Policy{Keep: 1}, t0.Add(time.Hour))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			infos, cur, err := List(v.root)
			if err != nil || cur != 1 || len(infos) != 1 {
				t.Errorf("after a failed build: current %d, %v, %v", cur, infos, err)
			}
			if _, err := os.Stat(filepath.Join(v.gens(), ".building-2")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("partial tree left: %v", err)
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Publish(ctx, v.root, 2, v.entries(), Policy{}, t0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled publish: %v", err)
	}
}

// TestExtraBytes: generation 1 has a, b, c, s; 2 replaces a and deletes b; 3 replaces c and s
// (each shared by 1 and 2) and adds e. Sizes are powers of two so that any miscount shows.
func TestExtraBytes(t *testing.T) {
	size := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name string
		p    Policy
		want int64
	}{
		// 1 alone: a(1), b(2), c(4), s(8); its d/s is shared with 2 but counted once either way.
		{name: "all three", p: Policy{Keep: 3}, want: 1 + 2 + 4 + 8},
		// 2 alone: c(4) and s(8); its a(16) is the current one.
		{name: "the previous one", p: Policy{Keep: 2}, want: 4 + 8},
		{name: "only pinned 1", p: Policy{Keep: 1, Pinned: []int64{1}}, want: 1 + 2 + 4 + 8},
		{name: "none", p: Policy{Keep: 1}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVol(t, map[string]string{"a": size(1), "b": size(2), "d/c": size(4), "d/s": size(8)})
			keepAll := Policy{Keep: 10}
			v.publish(1, keepAll, t0)
			v.put("a", size(16))
			v.del("b")
			v.publish(2, keepAll, t0.Add(time.Hour))
			v.put("d/c", size(32))
			v.put("d/s", size(64))
			v.put("e/f", size(128))
			sum := v.publish(3, tt.p, t0.Add(2*time.Hour))
			if sum.ExtraBytes != tt.want {
				t.Errorf("ExtraBytes = %d, want %d (kept %v)", sum.ExtraBytes, tt.want, generationsOf(sum))
			}
			// The same, whatever order the old trees are walked in.
			olds := generationsOf(sum)[1:]
			slices.Reverse(olds)
			d, err := openDir(unix.AT_FDCWD, v.gens())
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(d)
			if got, err := extraBytes(context.Background(), d, 3, olds); err != nil || got != tt.want {
				t.Errorf("ExtraBytes of %v = %d, %v; want %d", olds, got, err, tt.want)
			}
		})
	}
}

// TestHoldRacesCollector: readers hold current while a publisher switches generations and removes
// every old one it can; a held tree is always whole and of one generation.
func TestHoldRacesCollector(t *testing.T) {
	keys := []string{"a", "d/b", "d/e/c", "z"}
	v := newVol(t, nil)
	for _, k := range keys {
		v.put(k, "1")
	}
	v.publish(1, Policy{Keep: 1}, t0)

	skips, retries := heldSkips.Load(), holdRetries.Load()
	const readers, gens = 4, 60
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		done = make(chan struct{})
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for r := range readers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				g := int64(0)
				if r%2 == 1 && i%3 == 0 {
					g = int64(i%gens) + 1 // an explicit generation, maybe removed already
				}
				l, err := Hold(v.root, g)
				if g != 0 && errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					fail(err)
					return
				}
				want := strconv.FormatInt(l.Generation, 10)
				for _, k := range keys {
					b, err := os.ReadFile(filepath.Join(l.Dir, filepath.FromSlash(k)))
					if err != nil {
						fail(fmt.Errorf("generation %d, %s: %w", l.Generation, k, err))
					} else if string(b) != want {
						fail(fmt.Errorf("generation %d, %s: %q", l.Generation, k, b))
					}
				}
				l.Release()
			}
		})
	}
	for g := int64(2); g <= gens; g++ {
		for _, k := range keys {
			v.put(k, strconv.FormatInt(g, 10))
		}
		if _, err := Publish(context.Background(), v.root, g, v.entries(), Policy{Keep: 1}, t0.Add(time.Duration(g)*time.Minute)); err != nil {
			fail(err)
			break
		}
	}
	close(done)
	wg.Wait()
	t.Logf("the collector left %d held generations; readers retried %d times", heldSkips.Load()-skips, holdRetries.Load()-retries)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	sum := v.publish(gens, Policy{Keep: 1}, t0.Add(time.Hour*2))
	if d := cmp.Diff([]int64{gens}, generationsOf(sum)); d != "" {
		t.Errorf("kept once the readers left (-want +got):\n%s", d)
	}
}

// TestHoldFollowsCurrentPastCollector plays the collector by hand: it locks generation 1, which
// current names, while readers open it; then it switches current to 2, renames 1 away and unlocks.
// A reader of current retries and holds 2; a reader of generation 1 finds it gone.
func TestHoldFollowsCurrentPastCollector(t *testing.T) {
	v := newVol(t, map[string]string{"f": "1"})
	v.publish(1, Policy{Keep: 2}, t0)
	v.put("f", "2")
	v.publish(2, Policy{Keep: 2}, t0.Add(time.Hour))
	d, err := openDir(unix.AT_FDCWD, v.gens())
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(d)
	if err := switchCurrent(d, 1); err != nil {
		t.Fatal(err)
	}
	gc, err := openDir(d, "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := flock(gc, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	retries := holdRetries.Load()
	type result struct {
		l   *Lease
		err error
	}
	current, one := make(chan result, 1), make(chan result, 1)
	go func() { l, err := Hold(v.root, 0); current <- result{l, err} }()
	go func() { l, err := Hold(v.root, 1); one <- result{l, err} }()
	// Whether the readers opened 1 before the rename (and wait for the lock) or after (and find
	// nothing), the outcome is the same; the pause makes the first case likely.
	time.Sleep(50 * time.Millisecond)
	if err := switchCurrent(d, 2); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat(d, "1", d, ".deleting-1-test"); err != nil {
		t.Fatal(err)
	}
	unix.Close(gc)

	r := <-current
	if r.err != nil || r.l.Generation != 2 {
		t.Fatalf("Hold(current) = %+v, %v; want generation 2", r.l, r.err)
	}
	defer r.l.Release()
	if got := readTree(t, r.l.Dir)["f"]; got != "2" {
		t.Errorf("held tree reads %q, want 2", got)
	}
	if holdRetries.Load() == retries {
		t.Error("Hold(current) did not retry")
	}
	if r := <-one; !errors.Is(r.err, fs.ErrNotExist) {
		t.Errorf("Hold(1) = %+v, %v; want ErrNotExist", r.l, r.err)
	}
}
