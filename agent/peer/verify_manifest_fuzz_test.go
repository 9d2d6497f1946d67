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
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// bodyStore answers every GET with body: a peer's manifest as the fuzzer writes it.
type bodyStore struct{ body []byte }

func (b bodyStore) ListPages(context.Context, string, string, func(s3store.Page) error) error {
	return errors.New("not a listing")
}

func (b bodyStore) Get(context.Context, string, string, s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	return io.NopCloser(bytes.NewReader(b.body)), s3store.GetInfo{Length: int64(len(b.body))}, nil
}

func (b bodyStore) Head(context.Context, string, string) (s3store.Checksums, bool, error) {
	return s3store.Checksums{}, false, errors.New("no head")
}

func (b bodyStore) Describe(context.Context, string, string) (plan.Object, bool, error) {
	return plan.Object{}, false, errors.New("no describe")
}

// FuzzFetchManifest: whatever a peer sends as a manifest, the follower does not panic; it takes it
// only with the seed's digest of the same bytes (ManifestDigest of them as an object index) and only
// when it is an index (keys in strict order), and then finds every object of it by key; with another
// digest it is refused.
func FuzzFetchManifest(f *testing.F) {
	f.Add([]byte(`{"key":"a.parquet","size":3,"lastModified":"2026-01-01T00:00:00Z","etag":"\"x\""}` + "\n" +
		`{"key":"b/c.parquet","size":0,"lastModified":"2026-01-01T00:00:00.5Z","etag":"\"y\"","checksum":"CRC64NVME:AAAAAAAAAAA=","parts":[1,2]}` + "\n"))
	f.Add([]byte(`{"key":"b"}` + "\n" + `{"key":"a"}` + "\n"))
	f.Add([]byte("not json\n"))
	f.Add([]byte(""))
	f.Add([]byte(`{"key":"a\u00e9\"q"}` + "\n\n" + `{"key":"b","size":-1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(generations.IndexPath(root, 1)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(generations.IndexPath(root, 1), body, 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := ManifestDigest(root, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := FetchManifest(context.Background(), bodyStore{body}, 1, want, root)
		if err != nil {
			if !errors.Is(err, ErrManifestMismatch) {
				t.Fatalf("a manifest with the seed's digest failed otherwise than as a mismatch: %v", err)
			}
			return // not an index: out of key order, a line that names no key, or too long
		}
		defer m.Close()
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			o, err := generations.ParseObject(line)
			if err != nil {
				continue
			}
			got, ok, err := m.find(o.Key)
			if err != nil || !ok || got.Key != o.Key || got.Size != o.Size || got.ETag != o.ETag || got.Checksum != o.Checksum {
				t.Fatalf("key %q: found %+v, %v, %v; want %+v", o.Key, got, ok, err, o)
			}
		}
		if _, err := FetchManifest(context.Background(), bodyStore{body}, 1, want+"0", root); !errors.Is(err, ErrManifestMismatch) {
			t.Fatalf("a manifest with another digest was taken: %v", err)
		}
	})
}
