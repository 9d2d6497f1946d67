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

package peer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Store is what the sync engine reads a peer through (cache.Store, declared here so that this
// package does not import the engine).
type Store interface {
	ListPages(ctx context.Context, prefix, strip string, fn func(s3store.Page) error) error
	Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error)
	Head(ctx context.Context, key, etag string) (s3store.Checksums, bool, error)
	Describe(ctx context.Context, key, strip string) (plan.Object, bool, error)
}

// Manifest is a generation's manifest that a follower fetched from a peer and found to have the
// seed's digest, kept in an unlinked file with a sparse index of its keys (index), so that its memory
// does not grow with the number of objects.
type Manifest struct {
	g     int64
	files int64
	mu    sync.Mutex // guards idx.f's use by concurrent lookups
	idx   s3serve.IndexFile
}

// Close releases the manifest's file.
func (m *Manifest) Close() { m.idx.Close() }

// Files is how many objects the manifest holds.
func (m *Manifest) Files() int64 { return m.files }

// FetchManifest reads generation g's manifest from the peer p and accepts it only when its digest is
// want, the digest the seed published. The manifest is kept, while it is used, in an unlinked file
// under dir. A manifest that differs, or that is not one (lines out of order, not JSON, too long), is
// refused with ErrManifestMismatch.
func FetchManifest(ctx context.Context, p Store, g int64, want, dir string) (*Manifest, error) {
	if want == "" {
		return nil, fmt.Errorf("%w: the seed published no manifest digest for generation %d", ErrManifestMismatch, g)
	}
	ctx, cancel := context.WithTimeout(ctx, ManifestTimeout)
	defer cancel()
	body, _, err := p.Get(ctx, ManifestKey(g), "", s3store.Whole)
	if err != nil {
		return nil, fmt.Errorf("fetching the manifest of generation %d from the peer: %w", g, err)
	}
	defer func() { _ = body.Close() }() // only read
	f, err := keepOpen(dir)
	if err != nil {
		return nil, err
	}
	h, lines := sha256.New(), &lineCounter{}
	_, err = io.Copy(io.MultiWriter(f, h, lines), &capReader{r: body, left: MaxManifestBytes})
	if errors.Is(err, errManifestTooBig) {
		err = fmt.Errorf("%w: %w", ErrManifestMismatch, err)
	}
	if err != nil {
		_ = f.Close() // unlinked: nothing is left
		return nil, fmt.Errorf("reading the manifest of generation %d from the peer: %w", g, err)
	}
	if got := digestOf(h); got != want {
		_ = f.Close() // unlinked: nothing is left
		return nil, fmt.Errorf("%w: the manifest of generation %d has digest %s, the seed published %s", ErrManifestMismatch, g, got, want)
	}
	// The seed's own bytes; indexing them checks their key order all the same.
	idx, err := s3serve.NewIndexFile(f)
	if err != nil {
		_ = f.Close() // unlinked: nothing is left
		return nil, fmt.Errorf("%w: indexing the manifest of generation %d: %w", ErrManifestMismatch, g, err)
	}
	return &Manifest{g: g, files: lines.n, idx: idx}, nil
}

// MaxManifestBytes bounds the manifest a follower reads from a peer: about ten million objects
// with keys of 100 bytes. The follower keeps it on its disk while it syncs, so a peer that sends
// without end fills neither its disk nor its time (ManifestTimeout).
const MaxManifestBytes = 2 << 30

// ManifestTimeout bounds the time a follower takes to read a peer's manifest.
const ManifestTimeout = 10 * time.Minute

var errManifestTooBig = fmt.Errorf("the manifest is larger than %d bytes", MaxManifestBytes)

// lineCounter counts the lines written to it: the objects of a manifest.
type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// capReader reads r until left bytes are read, then fails with errManifestTooBig.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 && errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		return 0, errManifestTooBig
	}
	p = p[:min(int64(len(p)), c.left)]
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// find returns the manifest's object for key, relative to the generation.
func (m *Manifest) find(key string) (generations.Object, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.idx.Find(key)
}

// VerifiedStore is p as the sync engine may read it: every listed object, every object's metadata
// and every answer's checksums must be the manifest's, or the call fails with ErrManifestMismatch.
// The engine checks the bytes against that metadata (size, ETag, checksum, parts), as it checks the
// bucket's: a peer can serve only the bytes the seed took from the bucket. A listing that differs
// fails the sync; a file whose answer differs is fetched from the bucket instead.
func (m *Manifest) VerifiedStore(p Store) *VerifiedStore {
	return &VerifiedStore{m: m, p: p, prefix: Prefix(m.g)}
}

// VerifiedStore is a peer checked against a Manifest (Manifest.VerifiedStore).
type VerifiedStore struct {
	m       *Manifest
	p       Store
	prefix  string
	refused atomic.Int64
}

// Refused is how many of the peer's answers were refused.
func (v *VerifiedStore) Refused() int64 { return v.refused.Load() }

func (v *VerifiedStore) refuse(format string, args ...any) error {
	v.refused.Add(1)
	return fmt.Errorf("%w: "+format, append([]any{ErrManifestMismatch}, args...)...)
}

// lookup returns the manifest's object for a key of the peer (with the generation prefix).
func (v *VerifiedStore) lookup(key string) (generations.Object, error) {
	rel, ok := strings.CutPrefix(key, v.prefix)
	if !ok {
		return generations.Object{}, v.refuse("%q is outside generation %d", key, v.m.g)
	}
	o, found, err := v.m.find(rel)
	if err != nil {
		return o, fmt.Errorf("reading the seed's manifest: %w", err)
	}
	if !found {
		return o, v.refuse("the peer serves %q, which generation %d does not hold", rel, v.m.g)
	}
	return o, nil
}

// ListPages lists the peer and checks every object against the manifest: same key, size, ETag,
// LastModified and checksum algorithm, each key once, and, for a listing of the whole generation,
// every key of the manifest.
func (v *VerifiedStore) ListPages(ctx context.Context, prefix, strip string, fn func(s3store.Page) error) error {
	var listed int64
	last := ""
	err := v.p.ListPages(ctx, prefix, strip, func(pg s3store.Page) error {
		if len(pg.Refused) > 0 {
			return v.refuse("the peer lists %q, which no manifest holds", pg.Refused[0].Key)
		}
		for _, o := range pg.Objects {
			if listed > 0 && o.Key <= last {
				return v.refuse("the peer lists %q after %q", o.Key, last)
			}
			want, err := v.lookup(strip + o.Key)
			if err != nil {
				return err
			}
			if err := sameListing(o, want, false); err != nil {
				return v.refuse("%s", err)
			}
			listed, last = listed+1, o.Key
		}
		return fn(pg)
	})
	if err != nil {
		return err
	}
	if prefix == v.prefix && strip == v.prefix && listed != v.m.files {
		return v.refuse("the peer lists %d objects of generation %d, the seed's manifest holds %d", listed, v.m.g, v.m.files)
	}
	return nil
}

// sameListing says how a listed object differs from the manifest's. A HEAD (head) gives
// LastModified to the second and may list no checksum algorithm.
func sameListing(o plan.Object, want generations.Object, head bool) error {
	alg, _, _ := strings.Cut(want.Checksum, ":")
	wantLM := want.LastModified
	if head {
		wantLM = wantLM.Truncate(time.Second)
		alg = o.ChecksumAlgorithm
	}
	switch {
	case o.Size != want.Size:
		return fmt.Errorf("%q: size %d, the seed's manifest says %d", o.Key, o.Size, want.Size)
	case o.ETag != want.ETag:
		return fmt.Errorf("%q: ETag %s, the seed's manifest says %s", o.Key, o.ETag, want.ETag)
	case !o.LastModified.Equal(wantLM):
		return fmt.Errorf("%q: LastModified %s, the seed's manifest says %s", o.Key, o.LastModified, wantLM)
	case !strings.EqualFold(o.ChecksumAlgorithm, alg):
		return fmt.Errorf("%q: checksum algorithm %q, the seed's manifest says %q", o.Key, o.ChecksumAlgorithm, alg)
	}
	return nil
}

// Get opens part of key when the peer's answer is the manifest's: no encryption claimed (which would
// stop the engine checking the ETag), the upload's parts and the range asked for, and on a whole
// object the manifest's checksum.
func (v *VerifiedStore) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	want, err := v.lookup(key)
	if err != nil {
		return nil, s3store.GetInfo{}, err
	}
	if etag != "" && etag != want.ETag {
		return nil, s3store.GetInfo{}, v.refuse("%q asked with ETag %s, the seed's manifest says %s", key, etag, want.ETag)
	}
	body, info, err := v.p.Get(ctx, key, etag, r)
	if err != nil {
		return body, info, err
	}
	if err := v.sameAnswer(want, r, info); err != nil {
		_ = body.Close() // refused unread
		return nil, s3store.GetInfo{}, err
	}
	return body, info, nil
}

// sameAnswer checks what a GET answered against the manifest's object.
func (v *VerifiedStore) sameAnswer(want generations.Object, r s3store.Range, info s3store.GetInfo) error {
	if info.Encrypted {
		return v.refuse("%q: the peer claims server-side encryption", want.Key)
	}
	switch {
	case r.PartNumber > 0:
		parts := want.Parts
		if len(parts) == 0 {
			parts = []int64{want.Size}
		}
		n := int(r.PartNumber)
		if n > len(parts) || info.Length != parts[n-1] || info.PartsCount > 0 && int(info.PartsCount) != len(parts) {
			return v.refuse("%q: part %d of %d bytes in %d parts, the seed's manifest says %v", want.Key, n, info.Length, info.PartsCount, parts)
		}
	case r.Start == 0 && r.End < 0:
		if info.Start != 0 || info.Length != want.Size {
			return v.refuse("%q: %d bytes from %d, the seed's manifest says %d", want.Key, info.Length, info.Start, want.Size)
		}
		return v.sameChecksums(want, info.Checksums)
	default:
		end := want.Size - 1
		if r.End >= 0 {
			end = min(r.End, end)
		}
		if info.Start != r.Start || info.Length != end-r.Start+1 {
			return v.refuse("%q: bytes %d+%d for range %d-%d of %d", want.Key, info.Start, info.Length, r.Start, r.End, want.Size)
		}
	}
	return nil
}

// sameChecksums says whether a whole object's checksums are exactly the manifest's: the one it
// records, and no other (another would be checked instead of it).
func (v *VerifiedStore) sameChecksums(want generations.Object, got s3store.Checksums) error {
	alg, value, _ := strings.Cut(want.Checksum, ":")
	for _, a := range []integrity.Algorithm{integrity.CRC64NVME, integrity.CRC32, integrity.CRC32C, integrity.SHA1, integrity.SHA256} {
		expect := ""
		if string(a) == alg {
			expect = value
		}
		if g := got.Get(a); g != expect {
			return v.refuse("%q: checksum %s %q, the seed's manifest says %q", want.Key, a, g, expect)
		}
	}
	return nil
}

// Head reads key's checksums when they are exactly the manifest's.
func (v *VerifiedStore) Head(ctx context.Context, key, etag string) (s3store.Checksums, bool, error) {
	want, err := v.lookup(key)
	if err != nil {
		return s3store.Checksums{}, false, err
	}
	sums, encrypted, err := v.p.Head(ctx, key, etag)
	if err != nil {
		return sums, encrypted, err
	}
	if encrypted {
		return s3store.Checksums{}, false, v.refuse("%q: the peer claims server-side encryption", want.Key)
	}
	if err := v.sameChecksums(want, sums); err != nil {
		return s3store.Checksums{}, false, err
	}
	return sums, false, nil
}

// Describe reads key's listing when it is the manifest's; a key the manifest does not hold is not
// there.
func (v *VerifiedStore) Describe(ctx context.Context, key, strip string) (plan.Object, bool, error) {
	want, err := v.lookup(key)
	if err != nil {
		return plan.Object{}, false, err
	}
	o, ok, err := v.p.Describe(ctx, key, strip)
	if err != nil || !ok {
		return o, ok, err
	}
	if err := sameListing(o, want, true); err != nil {
		return plan.Object{}, false, v.refuse("%s", err)
	}
	return o, true, nil
}

// compile-time check that the peer's own store is one.
var _ Store = (*s3store.Store)(nil)
