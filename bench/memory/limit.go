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
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimited is where a cgroup v1 limit stops meaning anything (an unset limit reads as 2^63 rounded
// down to a page).
const unlimited = 1 << 62

// Limit returns the memory limit that applies to this process: the smallest limit of its cgroup and
// the cgroup's ancestors (cgroup v2 memory.max, v1 memory.limit_in_bytes), and the file it came from.
// ok is false when no limit is set. Engines size their own limits from it, because what they read as
// "the machine's memory" in a container is the host's: DuckDB's default memory_limit is 80% of that.
func Limit() (bytes int64, source string, ok bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	return limitIn(string(data), "/sys/fs/cgroup")
}

// limitIn is Limit over a /proc/self/cgroup text and a cgroup file system root.
func limitIn(procCgroup, root string) (bytes int64, source string, ok bool) {
	best := int64(0)
	consider := func(file string, v2 bool) {
		b, err := os.ReadFile(file)
		if err != nil {
			return
		}
		s := strings.TrimSpace(string(b))
		if v2 && s == "max" {
			return
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 || v >= unlimited {
			return
		}
		if !ok || v < best {
			best, source, ok = v, file, true
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var base, file string
		v2 := parts[0] == "0" && parts[1] == ""
		switch {
		case v2:
			base, file = root, "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			base, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		for _, dir := range cgroupDirs(base, parts[2]) {
			consider(filepath.Join(dir, file), v2)
		}
	}
	return best, source, ok
}

// cgroupDirs are the directories of cgroup p under a mount at base, innermost first, up to the
// mount's root. In a container the mount is often the container's own cgroup while /proc/self/cgroup
// names the host's path; then only the mount's root applies.
func cgroupDirs(base, p string) []string {
	p = path.Clean("/" + p)
	if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(p))); err != nil { //nolint:gosec // G703: the cgroup path is the kernel's, from /proc/self/cgroup, under its mount
		return []string{base}
	}
	var dirs []string
	for {
		dirs = append(dirs, filepath.Join(base, filepath.FromSlash(p)))
		if p == "/" {
			return dirs
		}
		p = path.Dir(p)
	}
}
