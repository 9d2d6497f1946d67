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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
)

// holdAfter lets n GETs through, then holds every later GET until the sync's context ends (or a
// deadline passes, which the test reports).
type holdAfter struct {
	cache.Store
	n        int64
	seen     atomic.Int64
	timedOut atomic.Bool
}

func (h *holdAfter) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	if h.seen.Add(1) > h.n {
		select {
		case <-ctx.Done():
			return nil, s3store.GetInfo{}, context.Cause(ctx)
		case <-time.After(20 * time.Second):
			h.timedOut.Store(true)
		}
	}
	return h.Store.Get(ctx, key, etag, r)
}

// TestPublishErrorStopsTheSync makes the directory every file goes to immutable (renames into it fail
// with EPERM even for root): the publisher's first batch fails, the sync stops downloading, and the
// report says why, by errno.
func TestPublishErrorStopsTheSync(t *testing.T) {
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skip("needs chattr (e2fsprogs)")
	}
	e := newEnv(t)
	const n = 400
	for i := range n {
		e.put(fmt.Sprintf("t/%03d.bin", i), []byte(fmt.Sprintf("object %d", i)))
	}
	target := filepath.Join(e.dir, "t")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), "chattr", "+i", target).CombinedOutput(); err != nil {
		t.Skipf("cannot make a directory immutable here: %v: %s", err, out)
	}
	// t.Context() is already cancelled when cleanups run: the undo needs a context of its own.
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "chattr", "-i", target).Run() })

	st, reqs := e.store(func(s *s3store.Store) cache.Store { return &holdAfter{Store: s, n: 300} })
	opts := e.options(reqs)
	rep, err := cache.Sync(context.Background(), st, opts)
	h := st.(*holdAfter)
	if h.timedOut.Load() {
		t.Fatal("the sync kept downloading for 20 s after its publisher failed")
	}
	if err == nil || rep.Reason != wire.ReasonVolumePermissionDenied {
		t.Fatalf("sync: %v, reason %q; want a failure with reason %s", err, rep.Reason, wire.ReasonVolumePermissionDenied)
	}
	if h.seen.Load() > h.n+int64(opts.Parallelism) {
		t.Fatalf("%d GETs started; the sync should have stopped after the publisher failed", h.seen.Load())
	}
	if !strings.Contains(rep.Message, "operation not permitted") || rep.FilesCopied != 0 {
		t.Fatalf("report: %+v", rep)
	}
	// Nothing was published, and the manifest says so.
	if out, err := exec.CommandContext(t.Context(), "chattr", "-i", target).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("%d files published into the immutable directory", len(entries))
	}
	e.expectVerified()
	// And the next sync, on a writable volume, copies everything.
	rep = e.mustSync(nil)
	if rep.FilesCopied != n {
		t.Fatalf("after the volume was fixed: %d copied, want %d", rep.FilesCopied, n)
	}
	e.expectVerified()
}

// TestPathConflictFailsOnlyThatFile: a file someone left where a key needs a directory fails that key
// (ENOTDIR, reason HostileKeys), and the rest of the sync goes on.
func TestPathConflictFailsOnlyThatFile(t *testing.T) {
	e := newEnv(t)
	e.put("a/x.bin", []byte("x"))
	e.put("b.bin", []byte("b"))
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "a"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := e.sync(nil)
	if !errors.Is(err, cache.ErrFilesFailed) || rep.Reason != wire.ReasonHostileKeys || rep.FilesCopied != 1 || rep.FilesFailed != 1 {
		t.Fatalf("sync: %v, report %+v", err, rep)
	}
	if !strings.Contains(rep.Failed[0].Error, "not a directory") {
		t.Fatalf("failure: %s", rep.Failed[0].Error)
	}
	e.expectFile("b.bin", []byte("b"))
	if staged := e.stagedFiles(); len(staged) != 0 {
		t.Fatalf("staging files left: %v", staged)
	}
}

// TestSymlinkedParentIsNotFollowed: a published directory that someone replaced by a symlink to a
// directory outside the cache is not written through: the file under it fails, nothing appears
// outside the cache, and the rest of the sync goes on.
func TestSymlinkedParentIsNotFollowed(t *testing.T) {
	e := newEnv(t)
	e.put("t/x.bin", []byte("x1"))
	e.put("u.bin", []byte("u1"))
	e.mustSync(nil)

	outside := t.TempDir()
	if err := os.RemoveAll(filepath.Join(e.dir, "t")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.dir, "t")); err != nil {
		t.Fatal(err)
	}
	e.put("t/x.bin", []byte("x2"))
	e.put("u.bin", []byte("u2"))
	rep, err := e.sync(nil)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("published through a symlinked parent: %d files outside the cache", len(entries))
	}
	if !errors.Is(err, cache.ErrFilesFailed) || rep.Reason != wire.ReasonHostileKeys || rep.FilesCopied != 1 || rep.FilesFailed != 1 || rep.Failed[0].Key != "t/x.bin" {
		t.Fatalf("sync: %v, report %+v", err, rep)
	}
	e.expectFile("u.bin", []byte("u2"))
	if staged := e.stagedFiles(); len(staged) != 0 {
		t.Fatalf("staging files left: %v", staged)
	}
}

// TestSymlinkedParentIsNotFollowedByDeletes: a delete under a published directory that someone
// replaced by a symlink removes nothing outside the cache.
func TestSymlinkedParentIsNotFollowedByDeletes(t *testing.T) {
	e := newEnv(t)
	e.put("t/x.bin", []byte("x1"))
	e.put("u.bin", []byte("u1"))
	e.mustSync(nil)

	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.bin"), []byte("not the cache's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.dir, "t")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.dir, "t")); err != nil {
		t.Fatal(err)
	}
	e.remove("t/x.bin")
	e.put("u.bin", []byte("u2"))
	rep, err := e.sync(nil)
	if b, rerr := os.ReadFile(filepath.Join(outside, "x.bin")); rerr != nil || string(b) != "not the cache's" {
		t.Fatalf("deleted through a symlinked parent: %q %v (sync %v, report %+v)", b, rerr, err, rep)
	}
	if !errors.Is(err, cache.ErrFilesFailed) || rep.FilesCopied != 1 || rep.FilesFailed != 1 || rep.Failed[0].Key != "t/x.bin" {
		t.Fatalf("sync: %v, report %+v", err, rep)
	}
	t.Logf("reason %s: %s", rep.Reason, rep.Failed[0].Error)
	e.expectFile("u.bin", []byte("u2"))
}
