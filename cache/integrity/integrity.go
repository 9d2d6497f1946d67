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

// Package integrity decides what an S3 store vouches for about an object's bytes, how a download must
// be cut so that it can be checked against that, and checks it from per-piece hashes computed while
// the bytes stream (no second read):
//   - a full-object CRC (CRC64NVME, S3's default; CRC32; CRC32C) is computed over ranges of any size
//     and combined, so large objects are fetched in parallel ranges and still checked end to end;
//   - a composite checksum (the checksum of the parts' checksums, "…-N") and a multipart ETag (the MD5
//     of the parts' MD5s, "…-N") need the upload's own part boundaries: such objects are fetched part
//     by part (GetObject partNumber), each part hashed as it arrives;
//   - a single-part upload's ETag is the MD5 of its bytes, and a SHA-1 or SHA-256 full-object
//     checksum cannot be combined: such objects are fetched in one stream.
//
// It does no I/O: the sync engine fetches, hashes with NewHash, and asks Verify.
package integrity

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"regexp"
	"strconv"
	"strings"
)

// Algorithm is a checksum algorithm as S3 names it, or MD5 for ETags.
type Algorithm string

// The algorithms, spelt as S3's x-amz-checksum-* headers and ChecksumAlgorithm fields name them, so
// that a value read from the store needs no translation.
const (
	CRC64NVME Algorithm = "CRC64NVME"
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
	// MD5 is the hash behind ETags: of the bytes for a single-part upload, of the parts' MD5s for a
	// multipart one. S3 does not offer it as a checksum.
	MD5 Algorithm = "MD5"
)

// ChecksumType is how a checksum covers a multipart object, as S3 names it.
type ChecksumType string

// The two types, spelt as S3's ChecksumType field names them.
const (
	FullObject ChecksumType = "FULL_OBJECT"
	Composite  ChecksumType = "COMPOSITE"
)

// Facts are what a listing says about an object.
type Facts struct {
	Size int64
	ETag string
	// Algorithm and Type are the checksum the store keeps (ListObjectsV2's ChecksumAlgorithm and
	// ChecksumType); empty when it lists none.
	Algorithm Algorithm
	Type      ChecksumType
}

// Fetch is how a download is cut.
type Fetch string

const (
	// FetchWhole is one stream from the first byte to the last.
	FetchWhole Fetch = "whole"
	// FetchRanges is byte ranges of the engine's part size, fetched in parallel.
	FetchRanges Fetch = "ranges"
	// FetchParts is the upload's own parts, one GET each (partNumber), fetched in parallel.
	FetchParts Fetch = "parts"
)

// Method names what a download was checked against; the manifest records it per file.
type Method string

const (
	// MethodSize checks only the size: the store vouches for nothing else.
	MethodSize Method = "size"
	// MethodChecksum checks the store's full-object checksum.
	MethodChecksum Method = "checksum"
	// MethodComposite checks the store's composite checksum, a checksum of each part's checksum.
	MethodComposite Method = "composite"
	// MethodETag checks a single-part upload's ETag, the MD5 of the bytes.
	MethodETag Method = "etag"
	// MethodMultipartETag checks a multipart upload's ETag, the MD5 of each part's MD5.
	MethodMultipartETag Method = "multipart-etag"
)

// Plan says how to fetch one object and what to check it against.
type Plan struct {
	Fetch Fetch
	// Parts is the number of upload parts, from the ETag's "-N" (FetchParts).
	Parts int
	// Method and Algorithm: what each piece is hashed with and what the hashes are checked against.
	Method    Method
	Algorithm Algorithm
	// FromHead is true when the expected value is not in the listing and not in the GETs' responses
	// (ranged and part GETs carry no full-object checksum): one HEAD asks for it.
	FromHead bool
	// Downgraded is true when the store vouches for more than the plan checks: the object could
	// only be fetched without the parts its check needs (WithoutParts).
	Downgraded bool
}

// Label is how the manifest records the check: "checksum:CRC64NVME", "multipart-etag", "size".
func (p Plan) Label() string {
	switch p.Method {
	case MethodChecksum, MethodComposite:
		return string(p.Method) + ":" + string(p.Algorithm)
	}
	return string(p.Method)
}

var (
	md5ETag       = regexp.MustCompile(`^"?[0-9a-fA-F]{32}"?$`)
	multipartETag = regexp.MustCompile(`^"?[0-9a-fA-F]{32}-([0-9]{1,5})"?$`)
)

// MultipartParts returns the part count of a multipart ETag ("…-N"), or 0.
func MultipartParts(etag string) int {
	m := multipartETag.FindStringSubmatch(etag)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func combinable(a Algorithm) bool { return a == CRC64NVME || a == CRC32 || a == CRC32C }

// Choose returns how to fetch and check an object: the strongest check the store offers that can be
// computed while the bytes stream, with as much parallelism within the object as that check allows.
// Objects of at most partSize bytes are fetched whole unless their check needs the upload's parts.
func Choose(f Facts, partSize int64) Plan {
	parts := MultipartParts(f.ETag)
	typ := f.Type
	if typ == "" && f.Algorithm != "" {
		// Stores that list no type: a single-part checksum covers the object; a multipart one made
		// before full-object checksums existed is composite.
		typ = FullObject
		if parts > 0 {
			typ = Composite
		}
	}
	small := f.Size <= partSize
	switch {
	case typ == FullObject && combinable(f.Algorithm):
		if small {
			return Plan{Fetch: FetchWhole, Method: MethodChecksum, Algorithm: f.Algorithm}
		}
		return Plan{Fetch: FetchRanges, Method: MethodChecksum, Algorithm: f.Algorithm, FromHead: true}
	case typ == Composite && parts > 0 && f.Algorithm != "":
		return Plan{Fetch: FetchParts, Parts: parts, Method: MethodComposite, Algorithm: f.Algorithm, FromHead: true}
	case parts > 0:
		return Plan{Fetch: FetchParts, Parts: parts, Method: MethodMultipartETag, Algorithm: MD5}
	case typ == FullObject && (f.Algorithm == SHA1 || f.Algorithm == SHA256):
		return Plan{Fetch: FetchWhole, Method: MethodChecksum, Algorithm: f.Algorithm}
	case md5ETag.MatchString(f.ETag):
		return Plan{Fetch: FetchWhole, Method: MethodETag, Algorithm: MD5}
	case small:
		return Plan{Fetch: FetchWhole, Method: MethodSize}
	}
	return Plan{Fetch: FetchRanges, Method: MethodSize}
}

// WithoutParts returns, for a plan that fetches an upload's parts, one that fetches the object in
// byte ranges (whole when it is at most partSize) and checks only its size: what can be done with a
// store that ignores part reads (S3-compatible stores that answer GET ?partNumber=N with the whole
// object), or when only sizes are checked. Other plans are returned as they are.
func (p Plan) WithoutParts(size, partSize int64) Plan {
	if p.Fetch != FetchParts {
		return p
	}
	fetch := FetchRanges
	if size <= partSize {
		fetch = FetchWhole
	}
	return Plan{Fetch: fetch, Method: MethodSize}
}

// Unchecked returns the plan with its check dropped but its fetch kept: for objects whose ETag turns
// out not to be an MD5 (SSE-KMS, SSE-C), or for size-only verification.
func (p Plan) Unchecked() Plan {
	p.Method, p.Algorithm, p.FromHead = MethodSize, "", false
	return p
}

// NewHash returns a new hash for a, one whose state can be saved (encoding.BinaryMarshaler), or nil
// for no algorithm.
func NewHash(a Algorithm) hash.Hash {
	switch a {
	case CRC64NVME:
		return NewCRC64NVME()
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	case MD5:
		return md5.New()
	}
	return nil
}

// ErrMismatch marks bytes that do not match what the store vouches for.
var ErrMismatch = errors.New("integrity check failed")

// Piece is one fetched piece of an object, in order: its length and the Sum of its hash.
type Piece struct {
	Len int64
	Sum []byte
}

// Verify checks pieces, in object order and covering it, against what the store claims: claim is the
// ETag for the ETag methods, and the checksum as the store writes it (base64, "-N" for composite)
// otherwise.
func (p Plan) Verify(pieces []Piece, claim string) error {
	var got string
	switch p.Method {
	case MethodSize:
		return nil
	case MethodETag:
		if len(pieces) != 1 {
			return fmt.Errorf("an MD5 ETag needs the object in one piece, got %d", len(pieces))
		}
		got, claim = hex.EncodeToString(pieces[0].Sum), strings.ToLower(strings.Trim(claim, `"`))
	case MethodMultipartETag:
		got, claim = compositeOf(MD5, pieces, hex.EncodeToString), strings.ToLower(strings.Trim(claim, `"`))
	case MethodComposite:
		got = compositeOf(p.Algorithm, pieces, base64.StdEncoding.EncodeToString)
		if !strings.Contains(claim, "-") {
			got, _, _ = strings.Cut(got, "-") // some stores leave the part count out
		}
	case MethodChecksum:
		sum, err := fullObject(p.Algorithm, pieces)
		if err != nil {
			return err
		}
		got = base64.StdEncoding.EncodeToString(sum)
	default:
		return fmt.Errorf("unknown check %q", p.Method)
	}
	if claim == "" {
		return fmt.Errorf("%w: the store gave no %s to check against", ErrMismatch, p.Label())
	}
	if got != claim {
		return fmt.Errorf("%w: %s is %s, the store says %s", ErrMismatch, p.Label(), got, claim)
	}
	return nil
}

func compositeOf(a Algorithm, pieces []Piece, enc func([]byte) string) string {
	h := NewHash(a)
	for _, pc := range pieces {
		h.Write(pc.Sum)
	}
	return enc(h.Sum(nil)) + "-" + strconv.Itoa(len(pieces))
}

func fullObject(a Algorithm, pieces []Piece) ([]byte, error) {
	if len(pieces) == 1 {
		return pieces[0].Sum, nil
	}
	var c *crcParams
	switch a {
	case CRC64NVME:
		c = crc64NVME
	case CRC32:
		c = crc32IEEE
	case CRC32C:
		c = crc32Castag
	default:
		return nil, fmt.Errorf("a %s checksum cannot be combined across %d pieces", a, len(pieces))
	}
	sums := make([][]byte, len(pieces))
	lens := make([]int64, len(pieces))
	for i, pc := range pieces {
		sums[i], lens[i] = pc.Sum, pc.Len
	}
	return combineSums(c, sums, lens), nil
}
