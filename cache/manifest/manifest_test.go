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

package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestRecoverResolvesEachCrashPoint sets up the state a crash leaves at each step of the publish and
// delete protocol, and checks what a reader sees before recovery and what recovery makes of it.
func TestRecoverResolvesEachCrashPoint(t *testing.T) {
	root := t.TempDir()
	m, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	old := func(k string) Entry {
		return Entry{Key: k, Size: 3, ETag: `"old"`, LastModified: time.Unix(1, 0).UTC()}
	}
	nw := func(k string) Entry {
		return Entry{Key: k, Size: 3, ETag: `"new"`, LastModified: time.Unix(2, 0).UTC()}
	}
	for _, k := range []string{"not-renamed", "renamed", "deleting"} {
		writeFile(t, LocalPath(root, k), "old")
		if err := m.Resolve([]Entry{old(k)}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Crash after the intent, before the rename: the staged file is still there.
	writeFile(t, filepath.Join(root, StagingDir, "a.part"), "new")
	// Crash after the rename, before the result was recorded.
	// A brand-new key renamed into place before the crash.
	writeFile(t, LocalPath(root, "renamed"), "new")
	writeFile(t, LocalPath(root, "brand/new"), "new")
	if err := m.Intend([]Intent{
		{Op: OpPublish, Entry: nw("not-renamed"), Staged: StagingDir + "/a.part"},
		{Op: OpPublish, Entry: nw("renamed"), Staged: StagingDir + "/b.part"},
		{Op: OpPublish, Entry: nw("brand/new"), Staged: StagingDir + "/c.part"},
		{Op: OpDelete, Entry: Entry{Key: "deleting"}},
	}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, StagingDir, "leftover.part"), "junk")
	writeFile(t, filepath.Join(root, ResumeDir, "big.part"), "half a download")

	want := map[string]string{"not-renamed": `"old"`, "renamed": `"new"`, "brand/new": `"new"`, "deleting": `"old"`}
	for k, etag := range want {
		e, ok, err := m.Get(k)
		if err != nil || !ok || e.ETag != etag {
			t.Errorf("before recovery a reader sees %s as %+v (found %v, %v), want ETag %s", k, e, ok, err, etag)
		}
	}
	m.Close()

	m, err = Open(root) // recovers
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want["deleting"] = ""
	for k, etag := range want {
		e, ok, err := m.Get(k)
		if err != nil || ok != (etag != "") || e.ETag != etag {
			t.Errorf("after recovery %s is %+v (found %v, %v), want ETag %q", k, e, ok, err, etag)
		}
	}
	if got := read(t, LocalPath(root, "not-renamed")); got != "old" {
		t.Errorf("not-renamed holds %q", got)
	}
	if _, err := os.Stat(LocalPath(root, "deleting")); !os.IsNotExist(err) {
		t.Errorf("deleting still exists: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, StagingDir)); len(entries) != 1 || entries[0].Name() != "resume" {
		t.Errorf("staging not emptied, or the resumable downloads not kept: %v", entries)
	}
	if got := read(t, filepath.Join(root, ResumeDir, "big.part")); got != "half a download" {
		t.Errorf("resumable download lost: %q", got)
	}
	var keys []string
	if err := m.Scan("", func(e Entry) error { keys = append(keys, e.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0] != "brand/new" || keys[1] != "not-renamed" || keys[2] != "renamed" {
		t.Errorf("scan after recovery: %v", keys)
	}
}

func TestIteratorCrossesBatchesAndStopsAtPrefix(t *testing.T) {
	m, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var entries []Entry
	for i := range 2*scanBatch + 7 {
		entries = append(entries, Entry{Key: "a/" + string(rune('a'+i%26)) + "/" + time.Duration(i).String()})
	}
	entries = append(entries, Entry{Key: "b/after"}, Entry{Key: "a"})
	if err := m.Resolve(entries, nil, nil); err != nil {
		t.Fatal(err)
	}
	n, last := 0, ""
	if err := m.Scan("a/", func(e Entry) error {
		if e.Key <= last {
			t.Fatalf("out of order: %q after %q", e.Key, last)
		}
		last = e.Key
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2*scanBatch+7 {
		t.Fatalf("scanned %d entries under a/, want %d", n, 2*scanBatch+7)
	}
	s, err := m.Commit("src", nil, nil)
	if err != nil || s.Files != int64(len(entries)) || s.Generation != 1 {
		t.Fatalf("commit: %+v %v", s, err)
	}
}

// TestCachedSummaryIsDroppedWhenAnEntryChanges: an unchanged sync reuses the last commit's summary,
// but never after entries changed without a commit (a run killed after publishing).
func TestCachedSummaryIsDroppedWhenAnEntryChanges(t *testing.T) {
	m, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, _, ok, err := m.Cached(); ok || err != nil {
		t.Fatalf("a new manifest has a cached summary: %v %v", ok, err)
	}
	if err := m.Resolve([]Entry{{Key: "a", Size: 1}, {Key: "b", Size: 2}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	s, err := m.Commit("src", nil, func() []byte { return []byte("layout") })
	if err != nil {
		t.Fatal(err)
	}
	got, extra, ok, err := m.Cached()
	if err != nil || !ok || got != s || string(extra) != "layout" {
		t.Fatalf("cached after commit: %+v %q %v %v, want %+v", got, extra, ok, err, s)
	}
	if err := m.Resolve(nil, nil, []string{"nothing"}); err != nil { // no entry changes
		t.Fatal(err)
	}
	if _, _, ok, _ := m.Cached(); !ok {
		t.Fatal("a Resolve that changed no entry dropped the cached summary")
	}
	if err := m.Resolve(nil, []string{"a"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := m.Cached(); ok {
		t.Fatal("the cached summary survived a deleted entry")
	}
	s2, err := m.Commit("src", nil, nil)
	if err != nil || s2.Files != 1 || s2.Generation != 2 {
		t.Fatalf("second commit: %+v %v", s2, err)
	}
	if got, _, ok, _ := m.Cached(); !ok || got != s2 {
		t.Fatalf("cached after the second commit: %+v %v", got, ok)
	}
}

func TestHashFileInPieces(t *testing.T) {
	data := []byte("0123456789abcdefghij") // 20 bytes
	sum := func(b []byte) []byte { h := sha256.Sum256(b); return h[:] }
	whole := hex.EncodeToString(sum(data))
	r := bytes.NewReader(data)
	buf := make([]byte, 7)
	cases := []struct {
		e    Entry
		want string
	}{
		{Entry{Size: 20}, whole},
		{Entry{Size: 20, PieceSize: 8}, PieceDigest([][]byte{sum(data[:8]), sum(data[8:16]), sum(data[16:])})},
		{Entry{Size: 20, PieceSize: 5, PieceSizes: []int64{5, 12, 3}}, PieceDigest([][]byte{sum(data[:5]), sum(data[5:17]), sum(data[17:])})},
	}
	for _, tc := range cases {
		got, err := HashFile(r, tc.e, buf)
		if err != nil || got != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.e, got, err, tc.want)
		}
	}
	if _, err := HashFile(r, Entry{Size: 20, PieceSize: 5, PieceSizes: []int64{5, 5}}, buf); err == nil {
		t.Error("piece sizes that do not cover the file were accepted")
	}
}

func TestEntryEncodingRoundTrips(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	sha := strings.Repeat("ab", 32)
	cases := []Entry{
		{Key: "a", Size: 1, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef"`, SHA256: sha, Verified: "checksum:CRC64NVME"},
		{Key: "b/c.parquet", Size: 1 << 40, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef-1234"`, SHA256: sha + "-8192",
			PieceSize: 1 << 20, Verified: "multipart-etag", Parquet: &ParquetFacts{Rows: 5, RowGroups: 1, MinRowsPerGroup: 5, MaxRowsPerGroup: 5, CompressedBytes: 99}},
		{Key: "d", LastModified: time.Unix(0, 0).UTC(), ETag: "0123456789ABCDEF0123456789ABCDEF", PieceSize: 5, PieceSizes: []int64{5, 7, 1}},
		{Key: "e", LastModified: at, ETag: `"kms-opaque"`, SHA256: "", Verified: "size"},
		{Key: "f", LastModified: at, ETag: `"abc-0"`},
		{Key: "g", LastModified: at, ETag: `"0123-01"`},
		{Key: "h", LastModified: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), ETag: `"`},
		{Key: "i", Size: 1 << 27, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef-16"`, Verified: "checksum:CRC64NVME",
			Checksum: "CRC64NVME:9C+2y1f0x4o="},
		{Key: "j", Size: 9, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef"`, SHA256: sha, Verified: "checksum:CRC32C",
			Checksum: "CRC32C:yZRlqg==", Parquet: &ParquetFacts{Rows: 1}},
		{Key: "k", Size: 12, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef-2"`, Verified: "multipart-etag", Parts: []int64{8, 4}},
		{Key: "l", Size: 12, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef-2"`, Verified: "composite:CRC32",
			Checksum: "CRC32:AAAAAA==", Parts: []int64{8, 4}, Parquet: &ParquetFacts{Rows: 2}},
	}
	for _, e := range cases {
		got, err := decodeEntry([]byte(e.Key), encodeEntry(e))
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %+v: %+v, %v", e, got, err)
		}
	}
	// Entries written by earlier versions, as JSON, still read.
	legacy := []byte(`{"key":"x","size":3,"lastModified":"2026-03-04T05:06:07Z","etag":"\"e\"","sha256":"` + sha + `"}`)
	if got, err := decodeEntry([]byte("x"), legacy); err != nil || got.Size != 3 || got.SHA256 != sha || got.ETag != `"e"` {
		t.Errorf("legacy JSON entry: %+v, %v", got, err)
	}
	if _, err := decodeEntry([]byte("x"), []byte{entryVersion, 0, 0xff}); err == nil {
		t.Error("a truncated entry decoded")
	}
	// An entry with a checksum is version 2, so that an older reader refuses it instead of misreading
	// it; read as version 1, its checksum is bytes left over.
	withSum := encodeEntry(cases[len(cases)-4])
	if withSum[0] != entryVersionChecksum {
		t.Errorf("an entry with a checksum was written as version %d", withSum[0])
	}
	if withParts := encodeEntry(cases[len(cases)-1]); withParts[0] != entryVersionParts {
		t.Errorf("an entry with parts was written as version %d", withParts[0])
	}
	withSum[0] = entryVersion
	if _, err := decodeEntry([]byte("i"), withSum); err == nil {
		t.Error("a version 1 entry with a checksum after it decoded")
	}
	if got := (Entry{Checksum: "CRC32:AAAAAA=="}).Hash(); got != "CRC32:AAAAAA==" {
		t.Errorf("Hash of an entry with only a checksum: %q", got)
	}
	if got := (Entry{SHA256: sha, Checksum: "CRC32:AAAAAA=="}).Hash(); got != sha {
		t.Errorf("Hash of an entry with both: %q, want its SHA-256", got)
	}
}

// rssFileKiB is this process's file-backed resident memory.
func rssFileKiB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestManifestPagesDoNotStayMapped writes 256,000 entries in publish-sized batches, then reads them
// all: the manifest's pages the process maps must not pile up in its resident memory (without the
// releases, ~34 MiB here; a million entries, ~130 MiB).
func TestManifestPagesDoNotStayMapped(t *testing.T) {
	m, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before := rssFileKiB(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 32)
	for b := range 1000 {
		put := make([]Entry, 256)
		done := make([]string, 256)
		for i := range put {
			n := b*256 + i
			put[i] = Entry{Key: fmt.Sprintf("d%04d/o%07d.bin", n/1000, n), Size: 1024, LastModified: at,
				ETag: `"e6186945d3dc47bd0cf9fc3b0e990cea"`, SHA256: sha, Verified: "checksum:CRC64NVME"}
			done[i] = put[i].Key
		}
		if err := m.Resolve(put, nil, done); err != nil {
			t.Fatal(err)
		}
	}
	afterWrites := rssFileKiB(t)
	s, err := m.Summary(nil)
	if err != nil || s.Files != 256_000 {
		t.Fatalf("summary: %+v %v", s, err)
	}
	afterScan := rssFileKiB(t)
	t.Logf("file-backed resident memory: %d KiB at the start, %d after the writes, %d after a full scan", before, afterWrites, afterScan)
	if afterWrites-before > 12<<10 || afterScan-before > 12<<10 {
		t.Fatalf("the manifest's pages stay mapped: +%d KiB after writing, +%d KiB after reading", afterWrites-before, afterScan-before)
	}
}
