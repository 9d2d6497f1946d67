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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pqcache/pqcache/cache/generations"
)

// BenchmarkManifestDigest measures what a new generation of 100,000 objects costs the seed (its
// digest, ManifestDigest) and a follower (fetching, checking and indexing the manifest,
// FetchManifest, here from memory): docs/sync.md quotes it.
func BenchmarkManifestDigest(b *testing.B) {
	root := b.TempDir()
	path := generations.IndexPath(root, 1)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 100_000 {
		o := generations.Object{Key: fmt.Sprintf("lineitem/batch=%06d/part-0.parquet", i), Size: 64 << 20, LastModified: when,
			ETag: fmt.Sprintf(`"%032x-8"`, i), Checksum: "CRC64NVME:9C+2y1f0x4o=", Parts: []int64{8 << 20, 8 << 20}}
		if err := enc.Encode(o); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	body, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	want, err := ManifestDigest(root, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seed", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := ManifestDigest(root, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("follower", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			m, err := FetchManifest(context.Background(), bodyStore{body}, 1, want, root)
			if err != nil {
				b.Fatal(err)
			}
			m.Close()
		}
	})
}
