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
func CgroupPeak() (bytes int64, source string, ok bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] == "/" {
			continue
		}
		var file, src string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file, src = filepath.Join("/sys/fs/cgroup", parts[2], "memory.peak"), "cgroup v2 memory.peak"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			file, src = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.max_usage_in_bytes"), "cgroup v1 memory.max_usage_in_bytes"
		default:
			continue
		}
		b, err := os.ReadFile(file) //nolint:gosec // G703: the cgroup path is the kernel's, from /proc/self/cgroup, under /sys/fs/cgroup
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil {
			return v, src, true
		}
	}
	return 0, "", false
}
