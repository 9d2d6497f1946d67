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

package plan

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/cache/manifest"
)

func TestValidateKey(t *testing.T) {
	good := []string{"a.parquet", "lineitem/batch=1/part.parquet", "a/.hidden", "a/..b", "x/.pqcache"}
	bad := []string{"", "/etc/passwd", "a/../../etc", "..", "./a", "a//b", "a/", "a\x00b", `a\..\b`, ".pqcache/manifest.db", ".pqcache"}
	for _, k := range good {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range bad {
		if err := ValidateKey(k); !errors.Is(err, ErrHostileKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrHostileKey", k, err)
		}
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		match, skip      []string
	}{
		{name: "no patterns takes all", match: []string{"a", "b/c.parquet"}},
		{name: "double star spans directories", include: []string{"**/*.parquet"},
			match: []string{"x.parquet", "a/b/c.parquet"}, skip: []string{"a/_SUCCESS", "a/b.csv"}},
		{name: "exclude wins", include: []string{"lineitem/**"}, exclude: []string{"**/_*"},
			match: []string{"lineitem/1/part.parquet"}, skip: []string{"lineitem/_SUCCESS", "orders/1/part.parquet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.include, tt.exclude)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.match {
				if !f.Match(k) {
					t.Errorf("%q not matched", k)
				}
			}
			for _, k := range tt.skip {
				if f.Match(k) {
					t.Errorf("%q matched", k)
				}
			}
		})
	}
	if _, err := NewFilter([]string{"a/[b"}, nil); err == nil {
		t.Error("an invalid glob was accepted")
	}
}

func TestConflictTracker(t *testing.T) {
	var tr ConflictTracker
	keys := []string{"a/b", "a/b-x", "a/b.txt", "a/b/c", "a/bc", "a/bc/d", "b", "b/c/d"}
	want := map[string]string{"a/b/c": "a/b", "a/bc/d": "a/bc", "b/c/d": "b"}
	for _, k := range keys {
		if got := tr.Add(k); got != want[k] {
			t.Errorf("Add(%q) = %q, want %q", k, got, want[k])
		}
	}
	if len(tr.chain) > 3 {
		t.Errorf("chain grew to %v", tr.chain)
	}
}

func TestFoldTracker(t *testing.T) {
	var tr FoldTracker
	// In ascending byte order, as a listing comes.
	keys := []string{"T/x", "t/A.parquet", "t/B.parquet", "t/a.parquet", "t/b", "t/x", "t/\xc3\x89t\xc3\xa9", "t/\xc3\xa9t\xc3\xa9", "t/\xfe", "t/\xff", "u/k", "u/\u212a"}
	collide := map[string]bool{"t/a.parquet": true, "t/\xc3\xa9t\xc3\xa9": true, "t/x": true}
	if !slices.IsSorted(keys) {
		t.Fatal("keys must be sorted")
	}
	for _, k := range keys {
		if got := tr.Add(k); got != collide[k] {
			t.Errorf("Add(%q) = %v, want %v", k, got, collide[k])
		}
	}
	// Only the keys with an upper-case or a non-ASCII byte are kept.
	if tr.seen.n != 7 {
		t.Errorf("%d folded keys kept, want 7", tr.seen.n)
	}
}

// BenchmarkFoldTracker reports the heap a FoldTracker keeps per key, for keys in lower case (none)
// and in mixed case (one hash per key).
func BenchmarkFoldTracker(b *testing.B) {
	const n = 1_000_000
	for _, name := range []string{"lower", "Mixed"} {
		b.Run(name, func(b *testing.B) {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("%s%02d/batch=%07d/part.parquet", name, i/(n/50), i)
			}
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				var tr FoldTracker
				for _, k := range keys {
					if tr.Add(k) {
						b.Fatalf("%s collides", k)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(&tr)
				b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/n, "heap-bytes/key")
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	obj := func(k string, size int64, etag string, at time.Time) Object {
		return Object{Key: k, Size: size, ETag: etag, LastModified: at}
	}
	ent := func(k string, size int64, etag string, at time.Time) manifest.Entry {
		return manifest.Entry{Key: k, Size: size, ETag: etag, LastModified: at}
	}
	type step struct {
		Op, Key string
		Why     Change
	}
	tests := []struct {
		name     string
		listed   []Object
		manifest []manifest.Entry
		noPrune  bool
		force    Change
		want     []step
	}{
		{
			name:   "empty cache copies everything",
			listed: []Object{obj("a", 1, `"1"`, t0), obj("b", 2, `"2"`, t0)},
			want:   []step{{"copy", "a", ChangeNew}, {"copy", "b", ChangeNew}},
		},
		{
			name:     "unchanged prefix does nothing",
			listed:   []Object{obj("a", 1, `"1"`, t0), obj("b", 2, `"2"`, t0)},
			manifest: []manifest.Entry{ent("a", 1, `"1"`, t0), ent("b", 2, `"2"`, t0)},
			want:     []step{{"same", "a", ""}, {"same", "b", ""}},
		},
		{
			name:     "each signal alone is a change",
			listed:   []Object{obj("etag", 1, `"new"`, t0), obj("older", 1, `"1"`, t0.Add(-time.Hour)), obj("size", 3, `"1"`, t0)},
			manifest: []manifest.Entry{ent("etag", 1, `"old"`, t0), ent("older", 1, `"1"`, t0), ent("size", 1, `"1"`, t0)},
			want:     []step{{"copy", "etag", ChangeETag}, {"copy", "older", ChangeLastModified}, {"copy", "size", ChangeSize}},
		},
		{
			name:     "vanished objects are deleted, in key order with the rest",
			listed:   []Object{obj("b", 1, `"1"`, t0), obj("d", 1, `"1"`, t0)},
			manifest: []manifest.Entry{ent("a", 1, `"1"`, t0), ent("b", 1, `"1"`, t0), ent("c", 1, `"1"`, t0), ent("e", 1, `"1"`, t0)},
			want:     []step{{"delete", "a", ""}, {"same", "b", ""}, {"delete", "c", ""}, {"copy", "d", ChangeNew}, {"delete", "e", ""}},
		},
		{
			name:     "no prune keeps vanished files",
			listed:   []Object{obj("b", 1, `"1"`, t0)},
			manifest: []manifest.Entry{ent("a", 1, `"1"`, t0), ent("b", 1, `"1"`, t0)},
			noPrune:  true,
			want:     []step{{"same", "a", ""}, {"same", "b", ""}},
		},
		{
			name:     "a changed source re-copies matching entries",
			listed:   []Object{obj("a", 1, `"1"`, t0)},
			manifest: []manifest.Entry{ent("a", 1, `"1"`, t0)},
			force:    ChangeSource,
			want:     []step{{"copy", "a", ChangeSource}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []step
			rest := tt.manifest
			m := &Merge{
				Next: func() (manifest.Entry, bool, error) {
					if len(rest) == 0 {
						return manifest.Entry{}, false, nil
					}
					e := rest[0]
					rest = rest[1:]
					return e, true, nil
				},
				Emit: func(a Action) error {
					if a.Copy {
						got = append(got, step{"copy", a.Object.Key, a.Why})
					} else {
						got = append(got, step{"delete", a.Old.Key, ""})
					}
					return nil
				},
				Unchanged: func(e manifest.Entry) { got = append(got, step{"same", e.Key, ""}) },
				Prune:     !tt.noPrune,
				ForceCopy: tt.force,
			}
			for _, o := range tt.listed {
				if err := m.Listed(o); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Finish(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("unsorted listing stops the merge", func(t *testing.T) {
		m := &Merge{Next: func() (manifest.Entry, bool, error) { return manifest.Entry{}, false, nil }, Emit: func(Action) error { return nil }}
		if err := m.Listed(obj("b", 1, "", t0)); err != nil {
			t.Fatal(err)
		}
		if err := m.Listed(obj("a", 1, "", t0)); !errors.Is(err, ErrUnsorted) {
			t.Fatalf("got %v, want ErrUnsorted", err)
		}
	})
}

func TestCompareAllowsWholeSecondsFromAHead(t *testing.T) {
	listed := time.Date(2026, 12, 3, 10, 1, 2, 345_000_000, time.UTC)
	headed := time.Date(2026, 12, 3, 10, 1, 2, 0, time.UTC)
	for _, tc := range []struct {
		name string
		obj  time.Time
		e    time.Time
		want Change
	}{
		{"equal", listed, listed, ""},
		{"listing in the second a HEAD recorded", listed, headed, ""},
		{"HEAD in the second a listing recorded", headed, listed, ""},
		{"another second", listed.Add(time.Second), headed, ChangeLastModified},
		{"two sub-second times differ", listed, listed.Add(time.Millisecond), ChangeLastModified},
		{"whole seconds differ", headed, headed.Add(-time.Second), ChangeLastModified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(Object{Key: "k", Size: 1, ETag: `"e"`, LastModified: tc.obj}, manifest.Entry{Key: "k", Size: 1, ETag: `"e"`, LastModified: tc.e})
			if got != tc.want {
				t.Fatalf("Compare = %q, want %q", got, tc.want)
			}
		})
	}
}
