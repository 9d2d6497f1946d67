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
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// int64s reads b as little-endian int64s (a fuzzer hands over bytes, not slices of numbers).
func int64s(b []byte) []int64 {
	var out []int64
	for ; len(b) >= 8; b = b[8:] {
		out = append(out, int64(binary.LittleEndian.Uint64(b)))
	}
	return out
}

func int64sBytes(v ...int64) []byte {
	var b []byte
	for _, n := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return b
}

// FuzzEntryRoundTrip: any entry a sync can write reads back equal: decode(encode(e)) == e, for
// every ETag and hash spelling (hex or not, quoted or not, "-N" or not), sizes, times and lists.
// Seeds are the shapes of TestEntryEncodingRoundTrips: S3's ETags, multipart ETags, KMS-opaque
// ones, checksums as S3 writes them.
func FuzzEntryRoundTrip(f *testing.F) {
	sha := "abababababababababababababababababababababababababababababababab"
	f.Add("a", int64(1), int64(1772600767), int64(890), `"0123456789abcdef0123456789abcdef"`, sha, "checksum:CRC64NVME", int64(0), []byte(nil), "", []byte(nil), false)
	f.Add("b/c.parquet", int64(1<<40), int64(0), int64(0), `"0123456789abcdef0123456789abcdef-1234"`, sha+"-8192", "multipart-etag", int64(1<<20), []byte(nil), "", []byte(nil), true)
	f.Add("d", int64(0), int64(-315619200), int64(0), "0123456789ABCDEF0123456789ABCDEF", "", "", int64(5), int64sBytes(5, 7, 1), "", []byte(nil), false)
	f.Add("e", int64(0), int64(1), int64(999999999), `"kms-opaque"`, "", "size", int64(0), []byte(nil), "", []byte(nil), false)
	f.Add("f", int64(0), int64(1), int64(0), `"abc-0"`, "0123-01", "", int64(0), []byte(nil), "", []byte(nil), false)
	f.Add("h", int64(-1), int64(-62135596800), int64(0), `"`, `""`, "", int64(-1), []byte(nil), "", []byte(nil), false)
	f.Add("l", int64(12), int64(1772600767), int64(1), `"0123456789abcdef0123456789abcdef-2"`, "", "composite:CRC32", int64(0), []byte(nil), "CRC32:AAAAAA==", int64sBytes(8, 4), true)
	f.Add("i", int64(1<<27), int64(1772600767), int64(1), `"0123456789abcdef0123456789abcdef-16"`, "", "checksum:CRC64NVME", int64(0), []byte(nil), "CRC64NVME:9C+2y1f0x4o=", []byte(nil), false)
	f.Fuzz(func(t *testing.T, key string, size, sec, nsec int64, etag, sha, verified string, pieceSize int64, pieceSizes []byte,
		checksum string, parts []byte, parquet bool) {
		e := Entry{Key: key, Size: size, LastModified: time.Unix(sec, nsec).UTC(), ETag: etag, SHA256: sha, Verified: verified,
			PieceSize: pieceSize, PieceSizes: int64s(pieceSizes), Checksum: checksum, Parts: int64s(parts)}
		if parquet {
			e.Parquet = &ParquetFacts{Rows: size, RowGroups: pieceSize, MinRowsPerGroup: sec, MaxRowsPerGroup: nsec, CompressedBytes: -size}
		}
		got, err := decodeEntry([]byte(key), encodeEntry(e))
		if err != nil {
			t.Fatalf("%+v does not read back: %v", e, err)
		}
		if d := cmp.Diff(e, got); d != "" {
			t.Fatalf("round trip (-wrote +read):\n%s", d)
		}
	})
}

// FuzzDecodeEntry feeds decodeEntry stored values it did not write (a damaged or foreign manifest
// file): binary entries of every version and earlier versions' JSON. Whatever it accepts must
// survive being written again and read back unchanged (up to the time's zone and empty lists, which
// the binary form does not keep), so that a rewrite never alters an entry it read.
func FuzzDecodeEntry(f *testing.F) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	for _, e := range []Entry{
		{Key: "a", Size: 1, LastModified: at, ETag: `"0123456789abcdef0123456789abcdef"`, SHA256: "abcd", Verified: "checksum:CRC64NVME"},
		{Key: "d", LastModified: time.Unix(0, 0).UTC(), ETag: "0123456789ABCDEF", PieceSize: 5, PieceSizes: []int64{5, 7, 1},
			Parquet: &ParquetFacts{Rows: 5, RowGroups: 1}},
		{Key: "i", Size: 1 << 27, LastModified: at, ETag: `"0123-16"`, Checksum: "CRC64NVME:9C+2y1f0x4o="},
		{Key: "l", Size: 12, LastModified: at, ETag: `"0123-2"`, Checksum: "CRC32:AAAAAA==", Parts: []int64{8, 4}},
	} {
		f.Add([]byte(e.Key), encodeEntry(e))
	}
	f.Add([]byte("x"), []byte(`{"key":"x","size":3,"lastModified":"2026-03-04T05:06:07+02:00","etag":"\"e\"","sha256":"ab","pieceSizes":[]}`))
	f.Add([]byte("x"), []byte{entryVersion, 0, 0xff})
	f.Fuzz(func(t *testing.T, key, v []byte) {
		e, err := decodeEntry(key, v)
		if err != nil {
			return
		}
		if v[0] != '{' && e.Key != string(key) {
			t.Fatalf("key %q read as %q", key, e.Key)
		}
		again, err := decodeEntry([]byte(e.Key), encodeEntry(e))
		if err != nil {
			t.Fatalf("%+v, read from %x, does not read back: %v", e, v, err)
		}
		if d := cmp.Diff(e, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("read from %x, then written and read (-first +again):\n%s", v, d)
		}
	})
}
