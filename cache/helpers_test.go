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
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/s3test"
)

// env is one S3 server with one bucket, and a cache directory.
type env struct {
	t      *testing.T
	srv    *s3test.Server
	bucket string
	prefix string
	dir    string
}

func newEnv(t *testing.T) *env {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "data")
	return &env{t: t, srv: srv, bucket: "data", prefix: "tpch/", dir: filepath.Join(t.TempDir(), "cache")}
}

func (e *env) put(key string, body []byte) { e.srv.PutObject(e.t, e.bucket, e.prefix+key, body) }

func (e *env) remove(key string) {
	e.t.Helper()
	if err := os.Remove(filepath.Join(e.srv.Root, e.bucket, e.prefix+key)); err != nil {
		e.t.Fatal(err)
	}
}

// store returns a fresh store (fresh request counters) over the test server.
func (e *env) store(wrap ...func(*s3store.Store) cache.Store) (cache.Store, *s3store.Requests) {
	e.t.Helper()
	st, err := s3store.New(context.Background(), s3store.Config{Bucket: e.bucket, Client: e.srv.Client()})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(wrap) > 0 {
		return wrap[0](st), st.Requests()
	}
	return st, st.Requests()
}

func (e *env) options(reqs *s3store.Requests) cache.Options {
	return cache.Options{Dir: e.dir, Source: "s3://" + e.bucket + "/" + e.prefix, Prefix: e.prefix, Prune: true, Parallelism: 4, Requests: reqs}
}

// sync runs one sync with opts adjusted by tweak.
func (e *env) sync(tweak func(*cache.Options)) (*wire.SyncReport, error) {
	e.t.Helper()
	st, reqs := e.store()
	opts := e.options(reqs)
	if tweak != nil {
		tweak(&opts)
	}
	return cache.Sync(context.Background(), st, opts)
}

func (e *env) mustSync(tweak func(*cache.Options)) *wire.SyncReport {
	e.t.Helper()
	rep, err := e.sync(tweak)
	if err != nil {
		e.t.Fatalf("sync: %v\nreport: %+v", err, rep)
	}
	return rep
}

// expectFile asserts the cached file of key has exactly want.
func (e *env) expectFile(key string, want []byte) {
	e.t.Helper()
	got, err := os.ReadFile(filepath.Join(e.dir, key))
	if err != nil {
		e.t.Fatalf("reading cached %s: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		e.t.Fatalf("cached %s: %d bytes, sha %s; want %d bytes, sha %s", key, len(got), sum(got), len(want), sum(want))
	}
}

func (e *env) expectAbsent(key string) {
	e.t.Helper()
	if _, err := os.Stat(filepath.Join(e.dir, key)); !os.IsNotExist(err) {
		e.t.Fatalf("cached %s should not exist (stat: %v)", key, err)
	}
}

func (e *env) expectVerified() {
	e.t.Helper()
	r, err := cache.Verify(e.dir)
	if err != nil {
		e.t.Fatalf("verify: %v", err)
	}
	if !r.OK() {
		e.t.Fatalf("verify found problems: %+v", r)
	}
}

// stagedFiles lists the files under the staging directory (resumable downloads included).
func (e *env) stagedFiles() []string {
	e.t.Helper()
	var files []string
	root := filepath.Join(e.dir, manifest.StagingDir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.t.Fatal(err)
	}
	return files
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
