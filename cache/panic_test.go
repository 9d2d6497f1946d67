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
	"context"
	"io"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// panicOnGet panics in every GET, in the sync's download workers' goroutines.
type panicOnGet struct{ cache.Store }

func (panicOnGet) Get(context.Context, string, string, s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	panic("a bug that this store's objects reach")
}

// TestAPanicInADownloadFailsTheSync: a panic while a worker downloads ends the sync with
// ReasonPanicked, not the process (a node agent runs every Dataset's syncs in one), and the
// published files stay as they were.
func TestAPanicInADownloadFailsTheSync(t *testing.T) {
	e, v1 := changedAfterSync(t, 1<<16)
	st, reqs := e.store(func(s *s3store.Store) cache.Store { return panicOnGet{s} })
	rep, err := cache.Sync(context.Background(), st, e.options(reqs))
	expectPanicked(t, e, v1, rep, err)
}

// TestAPanicInARangedPartFailsTheSync: a panic in the goroutine that fetches one range of a large
// object (started by the download worker, not the worker itself) ends the sync with ReasonPanicked.
func TestAPanicInARangedPartFailsTheSync(t *testing.T) {
	e, v1 := changedAfterSync(t, 1<<20)
	st, reqs := e.store(func(s *s3store.Store) cache.Store { return panicOnGet{s} })
	opts := e.options(reqs)
	opts.PartSize = 64 << 10 // sixteen ranges, each in its own goroutine
	rep, err := cache.Sync(context.Background(), st, opts)
	expectPanicked(t, e, v1, rep, err)
}

// panicOnDescribe panics in every HEAD, in the goroutines that describe a change set's keys.
type panicOnDescribe struct{ cache.Store }

func (panicOnDescribe) Describe(context.Context, string, string) (plan.Object, bool, error) {
	panic("a bug that this store's HEAD answers reach")
}

// TestAPanicInADescribeFailsTheSync: a change set's keys are described (HEAD) in goroutines of their
// own; a panic there ends the sync with ReasonPanicked.
func TestAPanicInADescribeFailsTheSync(t *testing.T) {
	e, v1 := changedAfterSync(t, 1<<16)
	st, reqs := e.store(func(s *s3store.Store) cache.Store { return panicOnDescribe{s} })
	opts := e.options(reqs)
	opts.Changes = &wire.ChangeSet{Changes: []wire.Change{{Key: e.prefix + "a.bin"}}}
	rep, err := cache.Sync(context.Background(), st, opts)
	expectPanicked(t, e, v1, rep, err)
}

// TestAPanicInAPublishFailsTheSync: files are published (renamed into place, recorded in the
// manifest) by a goroutine of their own; a panic there ends the sync with ReasonPanicked.
func TestAPanicInAPublishFailsTheSync(t *testing.T) {
	e, v1 := changedAfterSync(t, 1<<16)
	defer cache.SetPublishHook(func() { panic("a bug in publishing") })()
	rep, err := e.sync(nil)
	expectPanicked(t, e, v1, rep, err)
}

// changedAfterSync publishes a.bin of size bytes, then changes it in the bucket: the next sync has
// one file to copy. It returns the env and the published bytes.
func changedAfterSync(t *testing.T, size int) (*env, []byte) {
	t.Helper()
	e := newEnv(t)
	v1 := testfiles.Random(size, 1)
	e.put("a.bin", v1)
	e.mustSync(nil)
	e.put("a.bin", testfiles.Random(size, 2))
	return e, v1
}

// expectPanicked checks that a sync failed with ReasonPanicked and left a.bin as it was published.
func expectPanicked(t *testing.T, e *env, published []byte, rep *wire.SyncReport, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the sync succeeded")
	}
	if rep.Reason != wire.ReasonPanicked {
		t.Errorf("reason %q, want %s: %v", rep.Reason, wire.ReasonPanicked, err)
	}
	e.expectFile("a.bin", published)
}
