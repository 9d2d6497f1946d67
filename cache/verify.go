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

package cache

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/manifest"
)

// VerifyReport is what `pqcache verify` found. Lists hold the first problems; counts hold all.
type VerifyReport struct {
	Files      int64    `json:"files"`
	Bytes      int64    `json:"bytes"`
	Mismatched int64    `json:"mismatched"`
	Missing    int64    `json:"missing"`
	Extra      int64    `json:"extra"`
	Problems   []string `json:"problems,omitempty"`
}

// OK reports whether the cache matches its manifest.
func (r *VerifyReport) OK() bool { return r.Mismatched+r.Missing+r.Extra == 0 }

func (r *VerifyReport) problem(format string, args ...any) {
	if len(r.Problems) < 100 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Verify re-reads every published file under root and compares it with the manifest: size, and the
// file's hash where the manifest has one: SHA-256 (of the whole file, or of the pieces it was
// downloaded in), else the store's full-object checksum the download was verified against. It also
// reports files the manifest does not list. It opens the manifest read-only and changes nothing, so
// it is safe on a read-only volume.
func Verify(root string) (*VerifyReport, error) {
	m, err := manifest.OpenReadOnly(root)
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Close() }() // opened read-only: nothing to lose
	r := &VerifyReport{}
	buf := make([]byte, copyBufferSize)
	if err := m.Scan("", func(e manifest.Entry) error { return r.checkFile(root, e, buf) }); err != nil {
		return r, fmt.Errorf("verifying %s: %w", root, err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if key == manifest.Dir {
				return filepath.SkipDir
			}
			return nil
		}
		if _, ok, err := m.Get(key); err != nil {
			return err
		} else if !ok {
			r.Extra++
			r.problem("not in manifest: %s", key)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("walking %s: %w", root, err)
	}
	return r, nil
}

// checkFile counts one manifest entry and checks its file: there, of its size, and with the hash the
// manifest recorded (SHA-256, else the store's checksum). An error stops the walk; a problem found is
// counted and the walk goes on.
func (r *VerifyReport) checkFile(root string, e manifest.Entry, buf []byte) error {
	r.Files++
	r.Bytes += e.Size
	f, err := os.Open(manifest.LocalPath(root, e.Key))
	if errors.Is(err, fs.ErrNotExist) {
		r.Missing++
		r.problem("missing: %s", e.Key)
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() != e.Size {
		r.Mismatched++
		r.problem("size differs: %s has %d bytes, manifest says %d", e.Key, info.Size(), e.Size)
		return nil
	}
	switch {
	case e.SHA256 != "":
		got, err := manifest.HashFile(f, e, buf)
		if err != nil {
			return fmt.Errorf("reading %s: %w", e.Key, err)
		}
		if got != e.SHA256 {
			r.Mismatched++
			r.problem("content differs: %s has SHA-256 %s, manifest says %s", e.Key, got, e.SHA256)
		}
	case e.Checksum != "":
		alg, want, _ := strings.Cut(e.Checksum, ":")
		h := integrity.NewHash(integrity.Algorithm(alg))
		if h == nil {
			r.Mismatched++
			r.problem("unknown checksum: %s has %q in the manifest", e.Key, e.Checksum)
			return nil
		}
		if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, e.Size), buf); err != nil {
			return fmt.Errorf("reading %s: %w", e.Key, err)
		}
		if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
			r.Mismatched++
			r.problem("content differs: %s has %s %s, the manifest (and the store) say %s", e.Key, alg, got, want)
		}
	}
	return nil
}
