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
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
)

// TestDiskFullKeepsTheLastGoodCache syncs into a 6 MiB tmpfs. A change that needs more room than is
// left fails with reason InsufficientCapacity, and the previous files stay whole and verified.
func TestDiskFullKeepsTheLastGoodCache(t *testing.T) {
	e := newEnv(t)
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "pqcache-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", mnt, err, out)
		}
	})
	e.dir = filepath.Join(mnt, "cache")

	v1 := map[string][]byte{"a.bin": randomBytes(1<<20, 1), "b.bin": randomBytes(1<<20, 2), "c.bin": randomBytes(1<<20, 3)}
	for k, v := range v1 {
		e.put(k, v)
	}
	e.mustSync(nil)

	e.put("a.bin", randomBytes(4<<20, 4)) // 4 MiB more while the old 1 MiB is still published
	rep, err := e.sync(nil)
	if err == nil {
		t.Fatalf("a sync that cannot fit succeeded: %+v", rep)
	}
	if rep.Reason != cache.ReasonInsufficientCapacity {
		t.Fatalf("reason %q, want %s: %v", rep.Reason, cache.ReasonInsufficientCapacity, err)
	}
	for k, v := range v1 {
		e.expectFile(k, v)
	}
	e.expectVerified()
	if staged, _ := os.ReadDir(filepath.Join(e.dir, manifest.StagingDir)); len(staged) != 0 {
		t.Fatalf("%d staging files left on a full disk", len(staged))
	}
}
