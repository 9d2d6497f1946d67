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

package testfiles

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SmallDisk mounts a tmpfs of the given size (mount(8)'s "size=", such as "6m") for the test and
// returns its directory; it is unmounted when the test ends. A full disk is an edge users reach, so a
// machine where the mount is refused fails the test instead of skipping it: the suite runs as root,
// as CI does.
func SmallDisk(t testing.TB, size string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), "mount", "-t", "tmpfs", "-o", "size="+size, "pqcache-test", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %s tmpfs for a full disk (the test suite runs as root, as CI does): %v: %s", size, err, out)
	}
	t.Cleanup(func() {
		// t.Context() has ended by the time cleanups run.
		if out, err := exec.CommandContext(context.Background(), "umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}
