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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The cluster's cgroups are directories made by this tool under /pqcache-local in the hierarchies that
// are already mounted; nothing is mounted or remounted. A node's subtree holds all of the node (its
// supervisor, containerd and shims, kubelet, kube-proxy under system/, its pods under kubepods/), so a
// node dies at once by freezing and killing that subtree, and its memory and CPU are read from it.

const cgroupFS = "/sys/fs/cgroup"

// cgroupControllers lists the cgroup v1 hierarchies mounted under /sys/fs/cgroup (and the v2 one, where
// kubelet also keeps a tree on a hybrid host).
func cgroupControllers() []string {
	entries, _ := os.ReadDir(cgroupFS)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(cgroupFS, e.Name(), "cgroup.procs")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// makeCgroup creates rel (relative to each hierarchy's root) in every hierarchy. A new cpuset cgroup
// starts with no CPUs and no memory nodes, so each new level gets its parent's.
func makeCgroup(rel string) error {
	for _, ctl := range cgroupControllers() {
		dir := filepath.Join(cgroupFS, ctl)
		for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			if ctl != "cpuset" {
				continue
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if cur, _ := os.ReadFile(filepath.Join(dir, f)); strings.TrimSpace(string(cur)) != "" {
					continue
				}
				v, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("setting %s/%s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// joinCgroup moves the calling process into rel in every hierarchy; its children start there.
func joinCgroup(rel string) error {
	if err := makeCgroup(rel); err != nil {
		return err
	}
	pid := strconv.Itoa(os.Getpid())
	for _, ctl := range cgroupControllers() {
		procs := filepath.Join(cgroupFS, ctl, rel, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(pid), 0o644); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", procs, err)
		}
	}
	return nil
}

// cgroupDirs lists rel and every cgroup below it in every hierarchy, deepest first.
func cgroupDirs(rel string) []string {
	var dirs []string
	for _, ctl := range cgroupControllers() {
		root := filepath.Join(cgroupFS, ctl, rel)
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// setFrozen freezes or thaws rel and everything below it, with the v1 freezer where it is mounted and
// cgroup.freeze of the v2 hierarchy otherwise. Frozen, no process of the subtree can fork or restart
// another while the subtree is being killed.
func setFrozen(rel string, frozen bool) {
	if dir := filepath.Join(cgroupFS, "freezer", rel); exists(filepath.Join(dir, "freezer.state")) {
		state := map[bool]string{true: "FROZEN", false: "THAWED"}[frozen]
		_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte(state), 0o644)
		return
	}
	for _, v2 := range []string{filepath.Join(cgroupFS, "unified", rel), filepath.Join(cgroupFS, rel)} {
		if exists(filepath.Join(v2, "cgroup.freeze")) {
			_ = os.WriteFile(filepath.Join(v2, "cgroup.freeze"), []byte(map[bool]string{true: "1", false: "0"}[frozen]), 0o644)
			return
		}
	}
}

// killCgroup kills every process in rel and below, as a machine that loses power: frozen first, so
// that nothing escapes by forking, then SIGKILLed, then thawed so the signals are delivered. It
// returns once the subtree is empty, or after a few seconds.
func killCgroup(rel string) {
	for range 100 {
		setFrozen(rel, true)
		killed := 0
		for _, dir := range cgroupDirs(rel) {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed++
				}
			}
		}
		setFrozen(rel, false)
		if killed == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroup removes rel and every cgroup below it, retrying while their last processes exit.
func removeCgroup(rel string) error {
	var last error
	for range 50 {
		last = nil
		for _, dir := range cgroupDirs(rel) {
			if err := syscall.Rmdir(dir); err != nil && !os.IsNotExist(err) {
				last = fmt.Errorf("removing cgroup %s: %w", dir, err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// cgroupUsage reads the memory in use (bytes) and CPU time consumed (nanoseconds) by rel and below,
// from the v1 memory and cpuacct hierarchies.
func cgroupUsage(rel string) (memory, cpuNanos int64) {
	read := func(path string) int64 {
		data, _ := os.ReadFile(path)
		v, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return v
	}
	memory = read(filepath.Join(cgroupFS, "memory", rel, "memory.usage_in_bytes"))
	// usage_in_bytes counts the page cache too; what a process would lose to the OOM killer is rss.
	if stat, err := os.ReadFile(filepath.Join(cgroupFS, "memory", rel, "memory.stat")); err == nil {
		for _, line := range strings.Split(string(stat), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "total_rss" {
				memory, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	cpuNanos = read(filepath.Join(cgroupFS, "cpuacct", rel, "cpuacct.usage"))
	if cpuNanos == 0 {
		cpuNanos = read(filepath.Join(cgroupFS, "cpu,cpuacct", rel, "cpuacct.usage"))
	}
	return memory, cpuNanos
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
