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
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// listModel is List done the plain way: every full key of every source, the longer key prefix
// winning a key two sources hold, sorted, filtered and rolled up in one pass.
func listModel(sources map[string][]string, q ListQuery) (entries []string, truncatedAfter string) {
	winner := map[string]string{}
	for kp, keys := range sources {
		for _, k := range keys {
			if w, ok := winner[kp+k]; !ok || len(kp) > len(w) {
				winner[kp+k] = kp
			}
		}
	}
	var all []string
	for k := range winner {
		if strings.HasPrefix(k, q.Prefix) && k > q.After {
			all = append(all, k)
		}
	}
	slices.Sort(all)
	for _, k := range all {
		e := k
		if cp := commonPrefix(k, q.Prefix, q.Delimiter); cp != "" {
			if cp <= q.After || len(entries) > 0 && entries[len(entries)-1] == cp {
				continue
			}
			e = cp
		}
		if len(entries) == q.MaxKeys {
			return entries, entries[len(entries)-1]
		}
		entries = append(entries, e)
	}
	return entries, ""
}

// pageEntries is a page's objects and common prefixes in key order, checking that each object is
// the one its winning source holds.
func pageEntries(t *testing.T, p Page) []string {
	t.Helper()
	var out []string
	for _, o := range p.Objects {
		if !strings.HasSuffix(o.Key, o.Object.Key) {
			t.Fatalf("listed %q with the object of %q", o.Key, o.Object.Key)
		}
		out = append(out, o.Key)
	}
	out = append(out, p.Prefixes...)
	slices.Sort(out)
	return out
}

// fuzzSources turns the fuzzer's text into two sources: lines are keys; a line "#kp" starts the
// second source with key prefix kp.
func fuzzSources(t *testing.T, text, firstPrefix string) ([]Source, map[string][]string) {
	kps := []string{firstPrefix}
	keys := [][]string{nil}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if kp, ok := strings.CutPrefix(line, "#"); ok && len(kps) == 1 {
			kps, keys = append(kps, kp), append(keys, nil)
			continue
		}
		if line != "" && utf8.ValidString(line) && len(keys[len(keys)-1]) < 40 {
			keys[len(keys)-1] = append(keys[len(keys)-1], line)
		}
	}
	var sources []Source
	model := map[string][]string{}
	for i, kp := range kps {
		if !utf8.ValidString(kp) {
			return nil, nil
		}
		ks := slices.Compact(slices.Sorted(slices.Values(keys[i])))
		model[kp] = append(model[kp], ks...)
		sources = append(sources, Source{Index: writeIndex(t, ks), KeyPrefix: kp})
	}
	return sources, model
}

// FuzzList: a listing page over two sources (keys, key prefixes, prefix, delimiter, start and page
// size from the fuzzer) is what the plain model lists; paging on with Next lists every entry once,
// in order, and ends.
func FuzzList(f *testing.F) {
	f.Add("a.parquet\nb/c.bin\nb/d/e.bin\nb/d/f.bin\n#tpch/\nlineitem/part-0.parquet\nlineitem/part-1.parquet\norders/x", "", "", "/", "", uint8(2))
	f.Add("day=1/a\nday=1/b\nday=2/a\n#sales/day=1/\nc", "sales/", "sales/", "/", "sales/day=1/", uint8(1))
	f.Add("x\ny\n#\nx\nz", "p/", "", "", "", uint8(0))
	f.Add("a//b\na/\xffb\na/\xff\xff/c\n#a/\n/b", "", "a/", "/", "", uint8(3))
	f.Add("k1\nk2\nk3", "pre/", "pre/k", "k", "pre/k1", uint8(5))
	f.Fuzz(func(t *testing.T, text, firstPrefix, prefix, delimiter, after string, maxKeys uint8) {
		if !utf8.ValidString(prefix) || !utf8.ValidString(delimiter) || !utf8.ValidString(after) {
			return
		}
		sources, model := fuzzSources(t, text, firstPrefix)
		if sources == nil {
			return
		}
		limit := int(maxKeys%8) + 1
		q := ListQuery{Prefix: prefix, Delimiter: delimiter, After: after, MaxKeys: limit}
		want, wantNext := listModel(model, q)
		p, err := List(sources, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := pageEntries(t, p); !slices.Equal(got, want) || p.Next != wantNext {
			t.Fatalf("%+v: listed %q next %q, want %q next %q", q, got, p.Next, want, wantNext)
		}
		q.MaxKeys = 1000
		whole, _ := listModel(model, q)
		var paged []string
		q.MaxKeys = limit
		for range len(whole) + 2 {
			p, err := List(sources, q)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, pageEntries(t, p)...)
			if p.Next == "" {
				break
			}
			q.After = p.Next
		}
		if !slices.Equal(paged, whole) {
			t.Fatalf("paging %d at a time listed %q, want %q", limit, paged, whole)
		}
	})
}

// TestListRollsUpWithoutScanning: common prefixes over many keys each cost a seek, and the page
// says what the bucket would: Hive partitions of a table as prefixes, the files beside them as
// objects.
func TestListRollsUpWithoutScanning(t *testing.T) {
	var keys []string
	for d := range 5 {
		for i := range 3 * markStride {
			keys = append(keys, fmt.Sprintf("lineitem/l_shipdate=199%d/part-%04d.parquet", d, i))
		}
	}
	keys = append(keys, "lineitem/_SUCCESS")
	slices.Sort(keys)
	src := []Source{{Index: writeIndex(t, keys), KeyPrefix: "tpch/"}}
	p, err := List(src, ListQuery{Prefix: "tpch/lineitem/", Delimiter: "/", MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objects) != 1 || p.Objects[0].Key != "tpch/lineitem/_SUCCESS" || len(p.Prefixes) != 5 ||
		p.Prefixes[0] != "tpch/lineitem/l_shipdate=1990/" || p.Next != "" {
		t.Fatalf("page %+v", p)
	}
	p, err = List(src, ListQuery{Prefix: "tpch/", Delimiter: "/", MaxKeys: 1000})
	if err != nil || len(p.Objects) != 0 || !slices.Equal(p.Prefixes, []string{"tpch/lineitem/"}) {
		t.Fatalf("page %+v, %v", p, err)
	}
	p, err = List(src, ListQuery{Prefix: "other/", MaxKeys: 1000})
	if err != nil || len(p.Objects)+len(p.Prefixes) != 0 {
		t.Fatalf("a prefix no source holds: %+v, %v", p, err)
	}
}

// TestURLEncode: keys as S3 sends them for encoding-type=url, which clients decode with unquote_plus.
func TestURLEncode(t *testing.T) {
	for in, want := range map[string]string{
		"a/b c/d=1/ü+x.parquet": "a/b+c/d%3D1/%C3%BC%2Bx.parquet",
		"plain/key.bin":         "plain/key.bin",
	} {
		if got := URLEncode(in); got != want {
			t.Errorf("URLEncode(%q) = %q, want %q", in, got, want)
		}
	}
}
