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

package integrity

import (
	"crypto/md5"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestCRC64NVMECheckValue(t *testing.T) {
	// The catalogue check value of CRC-64/NVME: the CRC of "123456789".
	h := NewCRC64NVME()
	h.Write([]byte("123456789"))
	if got := h.Sum64(); got != 0xae8b14860a799888 {
		t.Fatalf("CRC-64/NVME(123456789) = %#x, want 0xae8b14860a799888", got)
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func sumOf(a Algorithm, b []byte) []byte {
	h := NewHash(a)
	h.Write(b)
	return h.Sum(nil)
}

func TestCRCsCombineAcrossAnySplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := randomBytes(rng, 1<<20+12345)
	for _, a := range []Algorithm{CRC64NVME, CRC32, CRC32C} {
		whole := sumOf(a, data)
		for trial := range 20 {
			// Cut into 1 to 6 pieces at random places, an empty piece included now and then.
			cuts := []int{0}
			for range rng.IntN(6) {
				cuts = append(cuts, rng.IntN(len(data)+1))
			}
			cuts = append(cuts, len(data))
			sortInts(cuts)
			var pieces []Piece
			for i := 1; i < len(cuts); i++ {
				p := data[cuts[i-1]:cuts[i]]
				pieces = append(pieces, Piece{Len: int64(len(p)), Sum: sumOf(a, p)})
			}
			plan := Plan{Method: MethodChecksum, Algorithm: a}
			if err := plan.Verify(pieces, base64.StdEncoding.EncodeToString(whole)); err != nil {
				t.Fatalf("%s, trial %d, cuts %v: %v", a, trial, cuts, err)
			}
		}
	}
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestCRC64NVMEMatchesTheStandardLibrary(t *testing.T) {
	// The same polynomial through hash/crc64's generic (slower) code.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 4095, 1 << 16} {
		data := randomBytes(rng, n)
		if got, want := sumOf(CRC64NVME, data), stdCRC64NVME(data); hex.EncodeToString(got) != hex.EncodeToString(want) {
			t.Fatalf("%d bytes: %x, hash/crc64 says %x", n, got, want)
		}
	}
}

// TestCRC64NVMEFoldingAtEveryLength covers the carry-less folding path (amd64) against the standard
// library at every length and alignment around its lane and block boundaries, written in one piece
// and in random pieces.
func TestCRC64NVMEFoldingAtEveryLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	data := randomBytes(rng, 4096+64)
	for n := 0; n <= 1100; n++ {
		for _, off := range []int{0, 1, 7, 15} {
			p := data[off : off+n]
			want := stdCRC64NVME(p)
			if got := sumOf(CRC64NVME, p); hex.EncodeToString(got) != hex.EncodeToString(want) {
				t.Fatalf("%d bytes at offset %d: %x, want %x", n, off, got, want)
			}
			h := NewCRC64NVME()
			for rest := p; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(300))
				h.Write(rest[:k])
				rest = rest[k:]
			}
			if got := h.Sum(nil); hex.EncodeToString(got) != hex.EncodeToString(want) {
				t.Fatalf("%d bytes at offset %d in pieces: %x, want %x", n, off, got, want)
			}
		}
	}
}

func TestHashStateSurvivesMarshalling(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := randomBytes(rng, 100_000)
	for _, a := range []Algorithm{CRC64NVME, CRC32, CRC32C, SHA1, SHA256, MD5} {
		h := NewHash(a)
		h.Write(data[:33_333])
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		r := NewHash(a)
		if err := r.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		r.Write(data[33_333:])
		if got, want := r.Sum(nil), sumOf(a, data); hex.EncodeToString(got) != hex.EncodeToString(want) {
			t.Fatalf("%s: resumed hash %x, want %x", a, got, want)
		}
	}
}

func TestVerifyEachMethod(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	parts := [][]byte{randomBytes(rng, 5<<10), randomBytes(rng, 5<<10), randomBytes(rng, 1234)}
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	pieces := func(a Algorithm) []Piece {
		var ps []Piece
		for _, p := range parts {
			ps = append(ps, Piece{Len: int64(len(p)), Sum: sumOf(a, p)})
		}
		return ps
	}
	// What S3 computes, written out independently of the code under test.
	md5s := md5.New()
	for _, p := range parts {
		s := md5.Sum(p)
		md5s.Write(s[:])
	}
	multipart := `"` + hex.EncodeToString(md5s.Sum(nil)) + `-3"`
	crcs := crc32.NewIEEE()
	for _, p := range parts {
		crcs.Write(sumOf(CRC32, p))
	}
	composite := base64.StdEncoding.EncodeToString(crcs.Sum(nil)) + "-3"
	single := md5.Sum(all)

	cases := []struct {
		name   string
		plan   Plan
		pieces []Piece
		claim  string
	}{
		{"multipart ETag", Plan{Method: MethodMultipartETag, Algorithm: MD5}, pieces(MD5), multipart},
		{"composite CRC32", Plan{Method: MethodComposite, Algorithm: CRC32}, pieces(CRC32), composite},
		{"composite without part count", Plan{Method: MethodComposite, Algorithm: CRC32}, pieces(CRC32), composite[:len(composite)-2]},
		{"full-object CRC64NVME", Plan{Method: MethodChecksum, Algorithm: CRC64NVME}, pieces(CRC64NVME), base64.StdEncoding.EncodeToString(sumOf(CRC64NVME, all))},
		{"single-part ETag", Plan{Method: MethodETag, Algorithm: MD5}, []Piece{{Len: int64(len(all)), Sum: single[:]}}, `"` + hex.EncodeToString(single[:]) + `"`},
		{"full-object SHA256", Plan{Method: MethodChecksum, Algorithm: SHA256}, []Piece{{Len: int64(len(all)), Sum: sumOf(SHA256, all)}}, base64.StdEncoding.EncodeToString(sumOf(SHA256, all))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.plan.Verify(tc.pieces, tc.claim); err != nil {
				t.Fatalf("good data refused: %v", err)
			}
			// One flipped bit in one part must be caught.
			bad := append([]Piece(nil), tc.pieces...)
			last := len(bad) - 1
			sum := append([]byte(nil), bad[last].Sum...)
			sum[0] ^= 1
			bad[last].Sum = sum
			if err := tc.plan.Verify(bad, tc.claim); !errors.Is(err, ErrMismatch) {
				t.Fatalf("a corrupt piece passed: %v", err)
			}
			if err := tc.plan.Verify(tc.pieces, ""); !errors.Is(err, ErrMismatch) {
				t.Fatalf("a missing claim passed: %v", err)
			}
		})
	}
	if err := (Plan{Method: MethodChecksum, Algorithm: SHA256}).Verify(pieces(SHA256), "x"); err == nil || errors.Is(err, ErrMismatch) {
		t.Fatalf("SHA-256 pieces cannot be combined; got %v", err)
	}
}

func TestChoose(t *testing.T) {
	const part = 16 << 20
	md5tag := `"0123456789abcdef0123456789abcdef"`
	mp := func(n int) string { return `"0123456789abcdef0123456789abcdef-` + strconv.Itoa(n) + `"` }
	cases := []struct {
		name string
		f    Facts
		want Plan
	}{
		{"small, CRC64NVME", Facts{Size: 1000, ETag: md5tag, Algorithm: CRC64NVME, Type: FullObject}, Plan{Fetch: FetchWhole, Method: MethodChecksum, Algorithm: CRC64NVME}},
		{"large, CRC64NVME: ranges, value from HEAD", Facts{Size: 1 << 30, ETag: mp(64), Algorithm: CRC64NVME, Type: FullObject}, Plan{Fetch: FetchRanges, Method: MethodChecksum, Algorithm: CRC64NVME, FromHead: true}},
		{"multipart, no checksum: parts and ETag", Facts{Size: 1 << 30, ETag: mp(128)}, Plan{Fetch: FetchParts, Parts: 128, Method: MethodMultipartETag, Algorithm: MD5}},
		{"small multipart, no checksum: still parts", Facts{Size: 10 << 20, ETag: mp(2)}, Plan{Fetch: FetchParts, Parts: 2, Method: MethodMultipartETag, Algorithm: MD5}},
		{"composite CRC32", Facts{Size: 1 << 30, ETag: mp(10), Algorithm: CRC32, Type: Composite}, Plan{Fetch: FetchParts, Parts: 10, Method: MethodComposite, Algorithm: CRC32, FromHead: true}},
		{"multipart CRC32C with no type listed: composite", Facts{Size: 1 << 30, ETag: mp(10), Algorithm: CRC32C}, Plan{Fetch: FetchParts, Parts: 10, Method: MethodComposite, Algorithm: CRC32C, FromHead: true}},
		{"single-part, no checksum, large: one stream for the MD5", Facts{Size: 1 << 30, ETag: md5tag}, Plan{Fetch: FetchWhole, Method: MethodETag, Algorithm: MD5}},
		{"single-part SHA256", Facts{Size: 1 << 30, ETag: md5tag, Algorithm: SHA256}, Plan{Fetch: FetchWhole, Method: MethodChecksum, Algorithm: SHA256}},
		{"opaque ETag, small", Facts{Size: 10, ETag: `"kms-opaque"`}, Plan{Fetch: FetchWhole, Method: MethodSize}},
		{"opaque ETag, large", Facts{Size: 1 << 30, ETag: `"kms-opaque"`}, Plan{Fetch: FetchRanges, Method: MethodSize}},
	}
	for _, tc := range cases {
		if got := Choose(tc.f, part); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func stdCRC64NVME(b []byte) []byte {
	h := crc64.New(crc64.MakeTable(crc64NVMEPoly))
	h.Write(b)
	return h.Sum(nil)
}

// BenchmarkCRC64NVME compares this package's CRC-64/NVME with hash/crc64's for the same polynomial,
// at the 256 KiB writes a download makes.
func BenchmarkCRC64NVME(b *testing.B) {
	buf := randomBytes(rand.New(rand.NewPCG(9, 9)), 256<<10)
	for _, impl := range []struct {
		name string
		new  func() hash.Hash
	}{
		{"integrity", func() hash.Hash { return NewCRC64NVME() }},
		{"hash-crc64", func() hash.Hash { return crc64.New(crc64.MakeTable(crc64NVMEPoly)) }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			h := impl.new()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				h.Write(buf)
			}
		})
	}
}
