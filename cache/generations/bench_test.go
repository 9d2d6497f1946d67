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

package generations

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/manifest"
)

// BenchmarkPublish builds a generation of 10,000 files (100 directories), and of 1,000,000 files
// (1,000 directories) when PQCACHE_BENCH_GENERATIONS_1M=1:
//
//	build:     a new tree (linking, records, switch), not durable; inodes/op is what it takes
//	build-manifest, manifest-scan-only: the same walking a real manifest, and the walk alone
//	unchanged: Publish of a generation whose tree exists (what every unchanged sync pays)
//	extra:     the ExtraBytes walk of one old tree against the current one, 1% of files replaced
func BenchmarkPublish(b *testing.B) {
	sizes := []struct {
		name        string
		dirs, files int
	}{{"10k", 100, 100}}
	if os.Getenv("PQCACHE_BENCH_GENERATIONS_1M") == "1" {
		sizes = append(sizes, struct {
			name        string
			dirs, files int
		}{"1M", 1000, 1000})
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			root := b.TempDir()
			keys := makeFiles(b, root, sz.dirs, sz.files)
			entries := func(fn func(manifest.Entry) error) error {
				for _, k := range keys {
					if err := fn(manifest.Entry{Key: k}); err != nil {
						return err
					}
				}
				return nil
			}
			gens := filepath.Join(root, filepath.FromSlash(Dir))
			g := int64(0)
			publish := func(b *testing.B, p Policy) {
				if _, err := Publish(context.Background(), root, g, entries, p, time.Now()); err != nil {
					b.Fatal(err)
				}
			}

			b.Run("build", func(b *testing.B) {
				var inodes uint64
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if g > 0 { // the previous tree: removing it is not what is measured
						os.RemoveAll(filepath.Join(gens, strconv.FormatInt(g, 10)))
					}
					g++
					before := ffree(b, root)
					start := time.Now()
					b.StartTimer()
					publish(b, Policy{Keep: 1})
					b.StopTimer()
					elapsed += time.Since(start)
					inodes += before - ffree(b, root)
					b.StartTimer()
				}
				n := float64(len(keys)) * float64(b.N)
				b.ReportMetric(n/elapsed.Seconds(), "files/s")
				b.ReportMetric(float64(inodes)/float64(b.N), "inodes/op")
			})

			// The same with the manifest's Scan as the walk, as the sync will call it.
			m, err := manifest.OpenWith(root, manifest.OpenOptions{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			for i := 0; i < len(keys); i += 10_000 {
				var put []manifest.Entry
				for _, k := range keys[i:min(i+10_000, len(keys))] {
					put = append(put, manifest.Entry{Key: k, ETag: `"0"`, LastModified: time.Now()})
				}
				if err := m.Resolve(put, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			// build-manifest-indexed also writes the object index a node agent serves peers from.
			for _, indexed := range []bool{false, true} {
				name := "build-manifest"
				if indexed {
					name += "-indexed"
				}
				b.Run(name, func(b *testing.B) {
					scan := func(fn func(manifest.Entry) error) error { return m.Scan("", fn) }
					var elapsed time.Duration
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						os.RemoveAll(filepath.Join(gens, strconv.FormatInt(g, 10)))
						g++
						start := time.Now()
						b.StartTimer()
						if _, err := Publish(context.Background(), root, g, scan, Policy{Keep: 1, Index: indexed}, time.Now()); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						elapsed += time.Since(start)
						b.StartTimer()
					}
					b.ReportMetric(float64(len(keys))*float64(b.N)/elapsed.Seconds(), "files/s")
				})
			}
			b.Run("manifest-scan-only", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := m.Scan("", func(manifest.Entry) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}
			})

			b.Run("unchanged", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					publish(b, Policy{Keep: 2})
				}
			})

			b.Run("extra", func(b *testing.B) {
				g++
				for i := 0; i < len(keys); i += 100 {
					replaceFile(b, filepath.Join(root, filepath.FromSlash(keys[i])))
				}
				publish(b, Policy{Keep: 2})
				d, err := openDir(unix.AT_FDCWD, gens)
				if err != nil {
					b.Fatal(err)
				}
				defer unix.Close(d)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := extraBytes(context.Background(), d, g, []int64{g - 1}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(keys))*float64(b.N)/b.Elapsed().Seconds(), "files/s")
			})
		})
	}
}

// makeFiles creates dirs×files empty files and returns their keys in key order.
func makeFiles(b *testing.B, root string, dirs, files int) []string {
	b.Helper()
	keys := make([]string, 0, dirs*files)
	for i := range dirs {
		dir := fmt.Sprintf("d%04d", i)
		if err := os.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			b.Fatal(err)
		}
		dfd, err := openDir(unix.AT_FDCWD, filepath.Join(root, dir))
		if err != nil {
			b.Fatal(err)
		}
		for j := range files {
			name := fmt.Sprintf("f%06d.parquet", j)
			fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
			keys = append(keys, dir+"/"+name)
		}
		unix.Close(dfd)
	}
	return keys
}

func replaceFile(b *testing.B, p string) {
	tmp := p + ".new"
	if err := os.WriteFile(tmp, []byte("replaced"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		b.Fatal(err)
	}
}

func ffree(b *testing.B, p string) uint64 {
	var s unix.Statfs_t
	if err := unix.Statfs(p, &s); err != nil {
		b.Fatal(err)
	}
	return s.Ffree
}
