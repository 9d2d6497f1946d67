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
	"strconv"
	"strings"
)

// CgroupPeak returns the peak memory of the cgroup this process runs in, and where it was read:
// "cgroup v2 memory.peak" or "cgroup v1 memory.max_usage_in_bytes". In a container (a BenchRun's
// pod) that is the peak of the runner and every query it ran, page cache included; the per-query
// figures come from the sampler. ok is false when the process is in the root cgroup (the figure would
// be the whole machine's) or the controller is not readable.
//
// Where the file is depends on how the container sees the hierarchy. With a cgroup namespace (v2's
// default) its cgroup is "/" and its memory.peak is /sys/fs/cgroup's own; without one (v1) its path
// is the host's, while /sys/fs/cgroup/memory is its own cgroup mounted at the root, so the file is at
// the mount's root. The machine's own root cgroup is never read: v2's root has no memory.peak, and a
// v1 line whose path is "/" is skipped (the root's max_usage_in_bytes is the machine's).
func CgroupPeak() (bytes int64, source string, ok bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		for _, file := range peakFiles(line) {
			// The path is the kernel's, from /proc/self/cgroup, under /sys/fs/cgroup.
			b, err := os.ReadFile(file.path)
			if err != nil {
				continue
			}
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return v, file.source, true
			}
		}
	}
	return 0, "", false
}

// peakFile is a file that may hold this process's cgroup peak.
type peakFile struct{ path, source string }

// peakFiles are the files that may hold the peak of the cgroup a /proc/self/cgroup line names, the
// host's path first, then the mount's root (a container's own cgroup without a cgroup namespace).
func peakFiles(line string) []peakFile {
	parts := strings.SplitN(line, ":", 3)
	if len(parts) != 3 {
		return nil
	}
	var root, name, src string
	switch {
	case parts[0] == "0" && parts[1] == "":
		root, name, src = "/sys/fs/cgroup", "memory.peak", "cgroup v2 memory.peak"
	case parts[2] == "/":
		return nil
	case strings.Contains(","+parts[1]+",", ",memory,"):
		root, name, src = "/sys/fs/cgroup/memory", "memory.max_usage_in_bytes", "cgroup v1 memory.max_usage_in_bytes"
	default:
		return nil
	}
	own, atRoot := filepath.Join(root, parts[2], name), filepath.Join(root, name)
	if own == atRoot { // v2 in a cgroup namespace: the container's cgroup is the mount's root
		return []peakFile{{own, src}}
	}
	return []peakFile{{own, src}, {atRoot, src}}
}
