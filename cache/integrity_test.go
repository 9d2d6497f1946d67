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
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/test/testfiles"
)

// putMultipart uploads parts as one multipart object, with the checksum algorithm and type the
// upload declares ("" for none, as older clients do).
func (e *env) putMultipart(key string, parts [][]byte, algo types.ChecksumAlgorithm, typ types.ChecksumType) {
	e.t.Helper()
	c, ctx, k := e.srv.Client(), context.Background(), aws.String(e.prefix+key)
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(e.bucket), Key: k}
	if algo != "" {
		in.ChecksumAlgorithm, in.ChecksumType = algo, typ
	}
	up, err := c.CreateMultipartUpload(ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, p := range parts {
		n := aws.Int32(int32(i + 1))
		pin := &s3.UploadPartInput{Bucket: aws.String(e.bucket), Key: k, UploadId: up.UploadId, PartNumber: n, Body: bytes.NewReader(p)}
		if algo != "" {
			pin.ChecksumAlgorithm = algo
		}
		out, err := c.UploadPart(ctx, pin)
		if err != nil {
			e.t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: n, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32,
			ChecksumCRC32C: out.ChecksumCRC32C, ChecksumSHA256: out.ChecksumSHA256, ChecksumCRC64NVME: out.ChecksumCRC64NVME})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(e.bucket), Key: k, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		e.t.Fatal(err)
	}
}

// storedPath is where versitygw keeps an object: its bytes in the file, its ETag and checksums in
// extended attributes.
func (e *env) storedPath(key string) string { return filepath.Join(e.srv.Root, e.bucket, e.prefix+key) }

// forgetChecksums removes the checksums versitygw keeps for an object, leaving its ETag: a store
// without checksums, such as one that predates them.
func (e *env) forgetChecksums(key string) {
	e.t.Helper()
	if err := unix.Removexattr(e.storedPath(key), "user.checksums"); err != nil {
		e.t.Fatal(err)
	}
}

// flipByte corrupts a stored object behind the server's back; its ETag and checksums stay.
func (e *env) flipByte(key string, at int64) { e.flipByteIn(e.storedPath(key), at) }

// flipLocalByte changes one byte of a published file in place.
func (e *env) flipLocalByte(key string, at int64) {
	e.flipByteIn(filepath.Join(e.dir, filepath.FromSlash(key)), at)
}

// flipByteIn changes one bit of the byte at at in the file at path, size unchanged.
func (e *env) flipByteIn(path string, at int64) {
	e.t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		e.t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, at); err != nil {
		e.t.Fatal(err)
	}
}

// TestEveryKindOfObjectIsVerifiedAgainstTheStore uploads each kind of object versitygw v1.8.0 can
// hold, syncs it, and checks what the manifest says it was verified against, how it was fetched
// (requests), and that the same object with one byte changed behind the server's back is refused.
func TestEveryKindOfObjectIsVerifiedAgainstTheStore(t *testing.T) {
	const part = 5 << 20 // S3's smallest part but the last
	parts := [][]byte{testfiles.Random(part, 1), testfiles.Random(part, 2), testfiles.Random(1234, 3)}
	whole := bytes.Join(parts, nil)
	cases := []struct {
		name     string
		upload   func(e *env, key string)
		partSize int64
		verified string
		gets     int64 // GETs for the object
		heads    int64
	}{
		{"single PUT, small: CRC64NVME from the GET", func(e *env, k string) { e.put(k, whole) }, 16 << 20, "checksum:CRC64NVME", 1, 0},
		{"single PUT, large: ranges, CRC64NVME combined", func(e *env, k string) { e.put(k, whole) }, 4 << 20, "checksum:CRC64NVME", 3, 1},
		{"single PUT without checksum: whole, ETag MD5", func(e *env, k string) { e.put(k, whole); e.forgetChecksums(k) }, 4 << 20, "etag", 1, 0},
		{"multipart, server's default full-object CRC64NVME: ranges", func(e *env, k string) { e.putMultipart(k, parts, "", "") }, 4 << 20, "checksum:CRC64NVME", 3, 1},
		{"multipart, full-object CRC32C", func(e *env, k string) {
			e.putMultipart(k, parts, types.ChecksumAlgorithmCrc32c, types.ChecksumTypeFullObject)
		}, 4 << 20, "checksum:CRC32C", 3, 1},
		{"multipart, composite CRC32: upload parts", func(e *env, k string) {
			e.putMultipart(k, parts, types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite)
		}, 4 << 20, "composite:CRC32", 3, 1},
		{"multipart, composite SHA256: upload parts", func(e *env, k string) {
			e.putMultipart(k, parts, types.ChecksumAlgorithmSha256, types.ChecksumTypeComposite)
		}, 16 << 20, "composite:SHA256", 3, 1},
		{"multipart without checksum: upload parts, ETag of part MD5s", func(e *env, k string) {
			e.putMultipart(k, parts, "", "")
			e.forgetChecksums(k)
		}, 16 << 20, "multipart-etag", 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.put("other.bin", []byte("unrelated"))
			tc.upload(e, "obj.bin")
			rep := e.mustSync(func(o *cache.Options) { o.PartSize = tc.partSize })
			e.expectFile("obj.bin", whole)
			e.expectVerified()
			m, err := manifest.OpenReadOnly(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			entry, _, _ := m.Get("obj.bin")
			m.Close()
			if entry.Verified != tc.verified {
				t.Errorf("verified against %q, want %q", entry.Verified, tc.verified)
			}
			if got := rep.Requests.Get - 1; got != tc.gets || rep.Requests.Head != tc.heads {
				t.Errorf("%d GETs and %d HEADs for the object, want %d and %d", got, rep.Requests.Head, tc.gets, tc.heads)
			}
			if alg, ok := strings.CutPrefix(tc.verified, "checksum:"); ok {
				// The store's full-object checksum is the manifest's hash: no SHA-256 besides it.
				h := integrity.NewHash(integrity.Algorithm(alg))
				h.Write(whole)
				if want := alg + ":" + base64.StdEncoding.EncodeToString(h.Sum(nil)); entry.Checksum != want || entry.SHA256 != "" {
					t.Errorf("manifest hash: checksum %q and SHA-256 %q, want checksum %q and no SHA-256", entry.Checksum, entry.SHA256, want)
				}
			} else {
				if entry.Checksum != "" {
					t.Errorf("manifest checksum %q for an object verified by %s", entry.Checksum, tc.verified)
				}
				if strings.Contains(entry.SHA256, "-") != (tc.gets > 1) {
					t.Errorf("manifest SHA-256 %q: pieces hashed as they arrived should show as -N when fetched in pieces", entry.SHA256)
				}
			}

			// The same version, one byte changed where the store cannot see it: refused.
			if err := os.Remove(filepath.Join(e.dir, "obj.bin")); err != nil {
				t.Fatal(err)
			}
			e.flipByte("obj.bin", int64(len(whole))/2+1)
			rep, err = e.sync(func(o *cache.Options) { o.PartSize = tc.partSize; o.Source = "elsewhere" })
			if !errors.Is(err, cache.ErrFilesFailed) || rep.FilesFailed != 1 || !strings.Contains(rep.Failed[0].Error, "integrity check failed: "+tc.verified) {
				t.Fatalf("a corrupted object was not refused by its %s: %v %+v", tc.verified, err, rep.Failed)
			}
			t.Log(rep.Failed[0].Error)
		})
	}
}

// TestTheStoresChecksumIsTheManifestsHash: by default a file the store vouches for with a full-object
// checksum gets that checksum as its manifest hash (one hash per byte, not two), `pqcache verify`
// re-checks the file against it and catches a changed byte; --verify sha256 adds SHA-256 of the file.
func TestTheStoresChecksumIsTheManifestsHash(t *testing.T) {
	small, large := testfiles.Random(300<<10, 7), testfiles.Random(9<<20+17, 8)
	for _, mode := range []cache.VerifyMode{cache.VerifyChecksum, cache.VerifySHA256} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t)
			e.put("small.bin", small)
			e.put("large.bin", large) // ranges of 4 MiB: the CRC64NVME is combined from three pieces
			e.mustSync(func(o *cache.Options) { o.PartSize = 4 << 20; o.Verify = mode })
			e.expectVerified()
			m, err := manifest.OpenReadOnly(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			for key, b := range map[string][]byte{"small.bin": small, "large.bin": large} {
				entry, _, _ := m.Get(key)
				crc := integrity.NewHash(integrity.CRC64NVME)
				crc.Write(b)
				if want := "CRC64NVME:" + base64.StdEncoding.EncodeToString(crc.Sum(nil)); entry.Checksum != want {
					t.Errorf("%s: checksum %q, want %q", key, entry.Checksum, want)
				}
				switch {
				case mode == cache.VerifyChecksum && entry.SHA256 != "":
					t.Errorf("%s: SHA-256 %q besides the store's checksum", key, entry.SHA256)
				case mode == cache.VerifySHA256 && key == "small.bin":
					if sum := sha256.Sum256(b); entry.SHA256 != hex.EncodeToString(sum[:]) {
						t.Errorf("%s: SHA-256 %q, want %x", key, entry.SHA256, sum)
					}
				case mode == cache.VerifySHA256 && !strings.HasSuffix(entry.SHA256, "-3"):
					t.Errorf("%s: SHA-256 %q, want the digest of 3 pieces", key, entry.SHA256)
				}
			}
			m.Close()

			// One byte changed on the volume, size unchanged: verify names the file.
			e.flipLocalByte("large.bin", 5<<20)
			r, err := cache.Verify(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.Mismatched != 1 || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "large.bin") {
				t.Errorf("verify after a changed byte: %+v", r)
			}
		})
	}
}

// TestLargeFilesAreWrittenStraightToDisk: the aligned bytes of a file over one copy buffer are written
// with direct I/O (no page cache to fill and write back), its unaligned tail through the page cache
// (handed to writeback at once for a file over 1 MiB); small files are left to the publisher's
// syncfs, an ephemeral destination (read right away by the pod that staged it) uses the page cache
// and writes back nothing, and PageCache turns direct I/O off.
func TestLargeFilesAreWrittenStraightToDisk(t *testing.T) {
	const size = 9<<20 + 17     // pieces of 4 MiB: 4 MiB, 4 MiB, 1 MiB + 17 bytes
	const midSize = 300<<10 + 5 // one buffer direct, the unaligned rest through the page cache
	large, mid, small := testfiles.Random(size, 9), testfiles.Random(midSize, 11), testfiles.Random(64<<10, 10)
	e := newEnv(t)
	e.put("large.bin", large)
	e.put("mid.bin", mid)
	e.put("small.bin", small)
	// syncInto syncs everything into a new directory and returns the bytes it wrote with direct I/O
	// and the bytes it handed to writeback early.
	syncInto := func(opt func(*cache.Options)) (direct, back int64) {
		direct, back = cache.WrittenDirect(), cache.WrittenBack()
		e.dir = t.TempDir()
		e.mustSync(func(o *cache.Options) { o.PartSize = 4 << 20; opt(o) })
		e.expectFile("large.bin", large)
		e.expectFile("mid.bin", mid)
		e.expectFile("small.bin", small)
		e.expectVerified()
		return cache.WrittenDirect() - direct, cache.WrittenBack() - back
	}
	direct, back := syncInto(func(*cache.Options) {})
	if want := int64(9<<20 + 256<<10); direct != want {
		t.Errorf("%d bytes written with direct I/O, want all of the large file but its 17-byte tail and the mid file's first buffer (%d)", direct, want)
	}
	if back != 17 {
		t.Errorf("%d bytes handed to writeback early, want the large file's tail (17)", back)
	}
	if direct, back = syncInto(func(o *cache.Options) { o.Ephemeral = true }); direct != 0 || back != 0 {
		t.Errorf("on an ephemeral destination: %d bytes direct, %d written back early; want none", direct, back)
	}
	// Told to use the page cache: no direct I/O, and the whole file handed to writeback as it arrives.
	if direct, back = syncInto(func(o *cache.Options) { o.PageCache = true }); direct != 0 || back != size {
		t.Errorf("with PageCache: %d bytes direct, %d written back early; want 0 and %d", direct, back, size)
	}
}
