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

package agent

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestChownCacheGivesTheTreeToTheAgent: a cache written by a root agent (root-owned directories,
// files, hard links and a symlink that points out of the cache) becomes the agent user's, the
// link's target outside stays root's, and a second run changes nothing.
func TestChownCacheGivesTheTreeToTheAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root (CAP_CHOWN), as the chart's init container has")
	}
	outside := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(outside, []byte("node"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "cache")
	gen := filepath.Join(root, "team-a", "events-uid", ".pqcache", "generations", "1")
	if err := os.MkdirAll(gen, 0o700); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(root, "team-a", "events-uid", "part.parquet")
	if err := os.WriteFile(part, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(part, filepath.Join(gen, "part.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "team-a", "escape")); err != nil {
		t.Fatal(err)
	}
	n, err := ChownCache(root, 65532, 65532)
	if err != nil {
		t.Fatal(err)
	}
	if n < 7 {
		t.Errorf("changed %d entries, want at least 7", n)
	}
	err = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if uid, gid := owner(t, p); uid != 65532 || gid != 65532 {
			t.Errorf("%s is owned by %d:%d", p, uid, gid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if uid, _ := owner(t, outside); uid != 0 {
		t.Errorf("the symlink's target outside the cache now belongs to %d", uid)
	}
	if n, err := ChownCache(root, 65532, 65532); n != 0 || err != nil {
		t.Errorf("a second run changed %d entries (%v), want none", n, err)
	}
}

func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
