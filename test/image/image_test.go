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

// Package image checks the container image's file system, as `make image-rootfs` assembles it from the
// Dockerfile's recipe: the binary must run, as the nonroot user, with only those files, and do a real
// sync, generate TPC-H data and query it. No Docker engine runs here; chroot (with a private /proc)
// stands in for the container's root.
package image

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/test/s3test"
)

func TestBinaryRunsWithOnlyTheImagesFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root; this test runs in CI, which runs as root")
	}
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if out, err := exec.CommandContext(t.Context(), "../../hack/image-rootfs.sh", rootfs).CombinedOutput(); err != nil {
		t.Fatalf("image-rootfs: %v\n%s", err, out)
	}
	// A container runtime adds /proc and /dev; so does this test: /proc mounted in a private mount
	// namespace of each command, and the /dev/null device that os/exec opens.
	for _, d := range []string{"proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknod(filepath.Join(rootfs, "dev", "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "unshare", append([]string{"--mount", "--pid", "--fork", "--mount-proc=" + filepath.Join(rootfs, "proc"),
			chroot, "--userspec=65532:65532", rootfs, "/usr/local/bin/pqcache"}, args...)...)
		cmd.Env = append([]string{"HOME=/tmp", "PATH=/usr/local/bin"}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(nil, "--version"); err != nil || !strings.Contains(out, "pqcache version") {
		t.Fatalf("pqcache --version in the image: %v\n%s", err, out)
	}

	// A real sync from versitygw into a volume owned by the nonroot user, and a verify.
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "t/a.bin", []byte("hello from the image"))
	data := filepath.Join(rootfs, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey, "AWS_REGION=" + s3test.Region, "AWS_EC2_METADATA_DISABLED=true"}
	if out, err := run(env, "sync", "s3://lake/t/", "/data", "--endpoint", srv.Endpoint, "--path-style", "--progress", "none"); err != nil {
		t.Fatalf("pqcache sync in the image: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(data, "a.bin")); err != nil || string(got) != "hello from the image" {
		t.Fatalf("synced file: %q, %v", got, err)
	}
	if out, err := run(nil, "verify", "/data"); err != nil {
		t.Fatalf("pqcache verify in the image: %v\n%s", err, out)
	}

	// The static runner that BenchRun Jobs copy into engine images: installed by pqcache itself (the
	// image has no cp), and runnable with nothing from the image (static, no DuckDB).
	if out, err := run(nil, "install-runner", "/data"); err != nil {
		t.Fatalf("pqcache install-runner: %v\n%s", err, out)
	}
	runner := filepath.Join(data, "pqcache-runner")
	if out, _ := exec.CommandContext(t.Context(), "ldd", runner).CombinedOutput(); !strings.Contains(string(out), "not a dynamic executable") {
		t.Fatalf("the runner is not static:\n%s", out)
	}
	if out, err := exec.CommandContext(t.Context(), runner, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "pqcache version") {
		t.Fatalf("the runner outside the image: %v\n%s", err, out)
	}

	// The embedded DuckDB and the tpch extension the image carries: generate, then query.
	if out, err := run(nil, "datagen", "--scale", "0.01", "--out", "/data/tpch"); err != nil || !strings.Contains(out, "lineitem         60175 rows") {
		t.Fatalf("pqcache datagen in the image: %v\n%s", err, out)
	}
	out, err := run(nil, "bench", "--data", "/data/tpch", "--queries", "1,6", "--iterations", "1", "--warmups", "0", "--json", "-")
	if err != nil || strings.Count(out, `"status": "Succeeded"`) != 2 {
		t.Fatalf("pqcache bench in the image: %v\n%s", err, out)
	}
	duckdbDigests := digests(t, out)

	// DuckDB in the image reads s3:// with the httpfs extension the image carries: the same answers.
	if out, err := run(env, "s3", "put", "/data/tpch", "s3://lake/tpch/", "--endpoint", srv.Endpoint, "--path-style"); err != nil {
		t.Fatalf("pqcache s3 put in the image: %v\n%s", err, out)
	}
	s3out, err := run(env, "bench", "--data", "s3://lake/tpch", "--endpoint", srv.Endpoint, "--path-style", "--queries", "1,6", "--iterations", "1", "--warmups", "0", "--json", "-")
	if err != nil || !reflect.DeepEqual(digests(t, s3out), duckdbDigests) {
		t.Fatalf("pqcache bench over s3:// in the image: %v\n%s", err, s3out)
	}

	// The Polars engine image (Dockerfile.polars), as a BenchRun Job runs it: the runner injected at
	// /pqcache, run.py and its Python found where the image keeps them, the same answers as DuckDB's
	// on both of Polars' engines (the streaming one spilling under $TMPDIR, as the read-only root file
	// system of a Job leaves it nowhere else).
	polarsRoot := filepath.Join(t.TempDir(), "polars-rootfs")
	if out, err := exec.CommandContext(t.Context(), "../../hack/image-rootfs-polars.sh", polarsRoot).CombinedOutput(); err != nil {
		t.Fatalf("image-rootfs-polars: %v\n%s", err, out)
	}
	// An image layer gives every file one fixed mtime (the local cluster's writer: the epoch). Python
	// must still load the image's bytecode rather than compile every module of the standard library
	// and Polars in each query process (it could not keep the result: the root is read-only).
	if out, err := exec.CommandContext(t.Context(), "find", polarsRoot, "-exec", "touch", "-h", "-d", "@0", "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	verbose, err := exec.CommandContext(t.Context(), chroot, "--userspec=65532:65532", polarsRoot, "/usr/local/lib/pqcache/polars/venv/bin/python", "-v", "-c", "import polars").CombinedOutput()
	if err != nil || !strings.Contains(string(verbose), "polars/__init__") {
		t.Fatalf("import polars in the Polars image: %v\n%s", err, verbose)
	}
	for _, line := range strings.Split(string(verbose), "\n") {
		if strings.Contains(line, "bytecode is stale") || (strings.HasPrefix(line, "# code object from") && strings.HasSuffix(line, ".py'")) {
			t.Fatalf("import polars in the Polars image compiled source instead of loading its bytecode: %s", line)
		}
	}
	for _, d := range []string{"proc", "dev", "pqcache", "data"} {
		if err := os.MkdirAll(filepath.Join(polarsRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknod(filepath.Join(polarsRoot, "dev", "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), "cp", "-a", runner, filepath.Join(polarsRoot, "pqcache", "pqcache-runner")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), "cp", "-a", filepath.Join(data, "tpch"), filepath.Join(polarsRoot, "data")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, engine := range []string{"in-memory", "streaming"} {
		cmd := exec.CommandContext(t.Context(), "unshare", "--mount", "--pid", "--fork", "--mount-proc="+filepath.Join(polarsRoot, "proc"),
			chroot, "--userspec=65532:65532", polarsRoot, "/pqcache/pqcache-runner",
			"bench", "--engine", "polars", "--polars-engine", engine, "--data", "/data/tpch", "--queries", "1,6", "--iterations", "1", "--warmups", "0", "--json", "-")
		cmd.Env = []string{"HOME=/tmp", "TMPDIR=/tmp", "PATH=/usr/bin", "POLARS_OOC_MEMORY_BUDGET_MB=1"}
		polarsOut, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(polarsOut), `"status": "Succeeded"`) != 2 {
			t.Fatalf("pqcache-runner bench --engine polars --polars-engine %s in the Polars image: %v\n%s", engine, err, polarsOut)
		}
		if got := digests(t, string(polarsOut)); !reflect.DeepEqual(got, duckdbDigests) {
			t.Fatalf("Polars %s in its image answered %v, DuckDB %v", engine, got, duckdbDigests)
		}
	}
}

// digests reads the per-query digests of `pqcache bench --json -` output.
func digests(t *testing.T, out string) map[string]string {
	t.Helper()
	var res struct {
		Queries []struct {
			Name   string `json:"name"`
			Digest string `json:"digest"`
		} `json:"queries"`
	}
	start := strings.Index(out, "{")
	if start < 0 || json.Unmarshal([]byte(out[start:]), &res) != nil {
		t.Fatalf("no bench JSON in:\n%s", out)
	}
	m := map[string]string{}
	for _, q := range res.Queries {
		if q.Name == "" || q.Digest == "" {
			t.Fatalf("a query without a name or digest in:\n%s", out)
		}
		m[q.Name] = q.Digest
	}
	return m
}
