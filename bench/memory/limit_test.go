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

package memory

import (
	"os"
	"path/filepath"
	"testing"
)

// cgroupTree writes files (path relative to root → content) into a fake cgroup file system.
func cgroupTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestLimitIn(t *testing.T) {
	const pod = "/kubepods/pod1/c1"
	for _, c := range []struct {
		name, procCgroup string
		files            map[string]string
		want             int64
		source           string
	}{
		{
			name: "v2: the container's own limit", procCgroup: "0::" + pod,
			files: map[string]string{"kubepods/pod1/c1/memory.max": "1073741824", "kubepods/pod1/memory.max": "2147483648", "kubepods/memory.max": "max"},
			want:  1 << 30, source: "kubepods/pod1/c1/memory.max",
		},
		{
			name: "v2: an ancestor's tighter limit", procCgroup: "0::" + pod,
			files: map[string]string{"kubepods/pod1/c1/memory.max": "max", "kubepods/pod1/memory.max": "536870912"},
			want:  512 << 20, source: "kubepods/pod1/memory.max",
		},
		{
			name: "v2 namespaced: the mount is the container's cgroup", procCgroup: "0::/",
			files: map[string]string{"memory.max": "268435456"},
			want:  256 << 20, source: "memory.max",
		},
		{
			name: "v1 hybrid (this machine's kind)", procCgroup: "9:name=systemd:/\n4:memory:" + pod + "\n0::/",
			files: map[string]string{"memory/kubepods/pod1/c1/memory.limit_in_bytes": "805306368", "memory/memory.limit_in_bytes": "9223372036854771712"},
			want:  768 << 20, source: "memory/kubepods/pod1/c1/memory.limit_in_bytes",
		},
		{
			name: "v1 in a container: the host path is not mounted", procCgroup: "4:memory:" + pod,
			files: map[string]string{"memory/memory.limit_in_bytes": "104857600"},
			want:  100 << 20, source: "memory/memory.limit_in_bytes",
		},
		{
			name: "no limit anywhere", procCgroup: "4:memory:" + pod + "\n0::/",
			files: map[string]string{"memory/kubepods/pod1/c1/memory.limit_in_bytes": "9223372036854771712"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := cgroupTree(t, c.files)
			got, src, ok := limitIn(c.procCgroup, root)
			if ok != (c.want > 0) || got != c.want || (ok && src != filepath.Join(root, filepath.FromSlash(c.source))) {
				t.Fatalf("limitIn = %d from %q (ok %v), want %d from %s", got, src, ok, c.want, c.source)
			}
		})
	}
}

// TestLimitOfThisProcess reads the real cgroup: a limit, when there is one, is above what this
// process uses.
func TestLimitOfThisProcess(t *testing.T) {
	v, src, ok := Limit()
	if ok {
		self, _ := TreeUsage(os.Getpid())
		if v < self.Total || src == "" {
			t.Fatalf("limit %d from %q is below this process's %d bytes", v, src, self.Total)
		}
	}
	t.Logf("memory limit %d from %q (set: %v)", v, src, ok)
}
