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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run this binary again as a child that allocates or maps a known amount of memory.
const childEnv = "PQCACHE_MEMORY_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "anon":
		n, _ := strconv.Atoi(os.Getenv("CHILD_BYTES"))
		b := make([]byte, n)
		for i := 0; i < n; i += 4096 {
			b[i] = 1 // touch every page
		}
		time.Sleep(400 * time.Millisecond)
		os.Exit(int(b[0]) - 1)
	case "mmap":
		f, err := os.Open(os.Getenv("CHILD_FILE"))
		if err != nil {
			os.Exit(2)
		}
		info, _ := f.Stat()
		data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			os.Exit(3)
		}
		sum := 0
		for i := 0; i < len(data); i += 4096 {
			sum += int(data[i])
		}
		time.Sleep(400 * time.Millisecond)
		if sum == -1 { // never true; keeps the reads from being optimised away
			println(sum)
		}
		os.Exit(0)
	case "tree":
		// A parent that starts an allocating child: the sampler must count both.
		cmd := exec.CommandContext(context.Background(), os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=anon")
		if err := cmd.Run(); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(t *testing.T, kind string, env ...string) Peak {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(append(os.Environ(), childEnv+"="+kind), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := Start(cmd.Process.Pid, 20*time.Millisecond)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child %s: %v", kind, err)
	}
	return s.Stop()
}

func within(got, want int64, tolerance float64) bool {
	return float64(got) >= float64(want)*(1-tolerance) && float64(got) <= float64(want)*(1+tolerance)
}

func TestAnonymousMemoryOfAChild(t *testing.T) {
	const n = 96 << 20
	p := runChild(t, "anon", "CHILD_BYTES="+strconv.Itoa(n)).AboveBaseline()
	if !within(p.Anon, n, 0.15) {
		t.Errorf("peak anonymous memory %d MiB above baseline, want about %d MiB", p.Anon>>20, n>>20)
	}
	if p.File > 16<<20 {
		t.Errorf("file-backed memory grew by %d MiB for a child that maps no file", p.File>>20)
	}
	if p.Total < p.Anon {
		t.Errorf("total %d < anon %d", p.Total, p.Anon)
	}
}

func TestFileBackedMemoryOfAChild(t *testing.T) {
	const n = 64 << 20
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runChild(t, "mmap", "CHILD_FILE="+path).AboveBaseline()
	if !within(p.File, n, 0.15) {
		t.Errorf("peak file-backed memory %d MiB above baseline, want about %d MiB", p.File>>20, n>>20)
	}
	if p.Anon > 16<<20 {
		t.Errorf("anonymous memory grew by %d MiB for a child that only maps a file", p.Anon>>20)
	}
}

func TestTheWholeTreeIsCounted(t *testing.T) {
	const n = 64 << 20
	p := runChild(t, "tree", "CHILD_BYTES="+strconv.Itoa(n)).AboveBaseline()
	if p.Anon < n*8/10 {
		t.Errorf("peak anonymous memory of the tree %d MiB, want at least %d MiB from the grandchild", p.Anon>>20, n*8/10>>20)
	}
}

// BenchmarkSample measures one sample of a small tree: at 20 samples a second, the sampler's CPU
// share is 20 × this time (`go test ./bench/memory -bench Sample`).
func BenchmarkSample(b *testing.B) {
	cmd := exec.CommandContext(b.Context(), "sleep", "30")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for b.Loop() {
		TreeUsage(cmd.Process.Pid)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*20/1e9*100, "%cpu-at-20Hz")
}

// TestCgroupPeak reads the cgroup figure where this process has a cgroup of its own. On a machine
// where tests run in the root cgroup, it checks that no machine-wide figure is passed off as ours.
func TestCgroupPeak(t *testing.T) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] != "/" && (parts[1] == "" || strings.Contains(","+parts[1]+",", ",memory,")) {
			own = true
		}
	}
	v, src, ok := CgroupPeak()
	if !own && ok {
		t.Fatalf("in the root cgroup, CgroupPeak returned %d from %s", v, src)
	}
	if own && ok {
		self, _ := TreeUsage(os.Getpid())
		if v < self.Total/2 || src == "" {
			t.Fatalf("cgroup peak %d (%s) is below this process's own %d", v, src, self.Total)
		}
	}
	t.Logf("own cgroup %v; CgroupPeak %d %q %v", own, v, src, ok)
}

// TestPeakFilesOfAContainersCgroup: a container without a cgroup namespace (cgroup v1, as on the local
// cluster here) sees its own cgroup mounted at the root of /sys/fs/cgroup/memory while
// /proc/self/cgroup names the host's path, so the mount's root is tried after that path (the Spark
// driver's peak was 0 without it); the machine's v1 root is never a candidate.
func TestPeakFilesOfAContainersCgroup(t *testing.T) {
	for line, want := range map[string][]string{
		"4:memory:/kubepods/burstable/podx/abc": {"/sys/fs/cgroup/memory/kubepods/burstable/podx/abc/memory.max_usage_in_bytes", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"},
		"0::/":                                  {"/sys/fs/cgroup/memory.peak"},
		"0::/kubepods.slice/x":                  {"/sys/fs/cgroup/kubepods.slice/x/memory.peak", "/sys/fs/cgroup/memory.peak"},
		"4:memory:/":                            nil,
		"3:cpuset:/x":                           nil,
		"garbage":                               nil,
	} {
		var got []string
		for _, f := range peakFiles(line) {
			got = append(got, f.path)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}
