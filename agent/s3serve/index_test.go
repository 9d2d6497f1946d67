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

package s3serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/cache/generations"
)

// writeIndex writes keys as an object index file, as Publish writes it, and opens it indexed.
func writeIndex(t *testing.T, keys []string) IndexFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "1.objects")
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for i, k := range keys {
		if err := enc.Encode(generations.Object{Key: k, Size: int64(i), ETag: fmt.Sprintf(`"%d"`, i), Parts: []int64{int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	idx, err := BuildIndex(f)
	if err != nil {
		t.Fatal(err)
	}
	return IndexFile{Index: idx, f: f}
}

// TestIndexAgreesWithAScan: lookups and listing pages read through the marks give what a scan of
// every key gives, for keys that JSON escapes (quotes, backslashes, HTML characters, control
// characters) and for pages that start on, before, between and after marks.
func TestIndexAgreesWithAScan(t *testing.T) {
	var keys []string
	for i := range 5*markStride + 3 {
		k := fmt.Sprintf("d%d/k%04d", i%3, i)
		switch i % 7 {
		case 1:
			k += `"quoted"`
		case 2:
			k += `\back`
		case 3:
			k += "<&>"
		case 4:
			k += "\x01ü"
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	x := writeIndex(t, keys)
	if want := (len(keys) + markStride - 1) / markStride; len(x.marks) != want {
		t.Errorf("%d marks for %d keys, want %d", len(x.marks), len(keys), want)
	}
	for i, k := range keys {
		o, ok, err := x.Find(k)
		if err != nil || !ok || o.Key != k || o.Size != int64(i) {
			t.Fatalf("find %q: %+v %v %v", k, o, ok, err)
		}
		if _, ok, err := x.Find(k + "\x00"); ok || err != nil {
			t.Fatalf("find of a key that is not there: %v %v", ok, err)
		}
	}
	for _, prefix := range []string{"", "d1/", "d2/k01", "e"} {
		markers := []string{"", "a", "z"}
		for i := 0; i < len(keys); i += 17 {
			markers = append(markers, keys[i])
		}
		for _, marker := range markers {
			checkPage(t, x, keys, prefix, marker, 50)
		}
	}
}

// checkPage compares a page read through the index with the keys a scan finds.
func checkPage(t *testing.T, x IndexFile, keys []string, prefix, marker string, limit int) {
	t.Helper()
	var want []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) && k > marker {
			want = append(want, k)
		}
	}
	wantMore := len(want) > limit
	want = want[:min(len(want), limit)]
	objs, more, err := x.After(prefix, marker, limit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
	}
	if !slices.Equal(got, want) || more != wantMore {
		t.Errorf("prefix %q after %q: %q more=%v, want %q more=%v", prefix, marker, got, more, want, wantMore)
	}
}

// TestIndexOutOfOrderIsRefused: an index not in strict key order cannot be searched; it is refused
// when it is read, not served wrong.
func TestIndexOutOfOrderIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.objects")
	if err := os.WriteFile(path, []byte(`{"key":"b"}`+"\n"+`{"key":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := BuildIndex(f); !errors.Is(err, ErrIndexOrder) {
		t.Errorf("an index out of order: %v, want ErrIndexOrder", err)
	}
}
