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

package s3store

// Uploading a local file or directory tree (`pqcache s3 put`: demo data, tests, benchmarks).

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Upload is one local file and the key it goes to.
type Upload struct{ Path, Key string }

// UploadsOf pairs each local file with its key: a directory's files go under key (a prefix, "/"
// added if missing) by relative path; a single file goes to key itself, or under it when key ends
// with "/".
func UploadsOf(src, key string) ([]Upload, error) {
	info, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		if key == "" || strings.HasSuffix(key, "/") {
			key += filepath.Base(src)
		}
		return []Upload{{src, key}}, nil
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	var files []Upload
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		files = append(files, Upload{p, key + filepath.ToSlash(rel)})
		return nil
	})
	return files, err
}

// PutFiles uploads each file, parallel at a time, and returns the bytes put and the uploads that
// failed: one failure does not stop the others.
func (s *Store) PutFiles(ctx context.Context, files []Upload, parallel int) (int64, []error) {
	var (
		mu    sync.Mutex
		errs  []error
		bytes int64
		wg    sync.WaitGroup
		next  = make(chan Upload)
	)
	for range max(parallel, 1) {
		wg.Go(func() {
			for u := range next {
				n, err := s.putFile(ctx, u)
				mu.Lock()
				bytes += n
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, u := range files {
		next <- u
	}
	close(next)
	wg.Wait()
	return bytes, errs
}

// putFile uploads one file with its size known up front (one PUT, no buffering).
func (s *Store) putFile(ctx context.Context, u Upload) (int64, error) {
	f, err := os.Open(u.Path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // only read
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), s.Put(ctx, u.Key, f, info.Size())
}

// PutTree uploads src (a file, or a directory's files) under key into cfg's bucket, made first when
// it does not exist, parallel at a time: `pqcache s3 put`. It returns what was put, and every
// failure joined.
func PutTree(ctx context.Context, cfg Config, src, key string, parallel int) (files int, bytes int64, err error) {
	store, err := New(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	if err := store.EnsureBucket(ctx); err != nil {
		return 0, 0, err
	}
	uploads, err := UploadsOf(src, key)
	if err != nil {
		return 0, 0, err
	}
	bytes, errs := store.PutFiles(ctx, uploads, parallel)
	return len(uploads) - len(errs), bytes, errors.Join(errs...)
}
