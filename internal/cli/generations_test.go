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

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/test/s3test"
)

// TestGenerationsCommandLine syncs twice with the default generations, lists them, and runs a reader
// on the held current generation with `generations exec`.
func TestGenerationsCommandLine(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/a.csv", []byte("first"))
	useTestCredentials(t)
	dir := filepath.Join(t.TempDir(), "cache")
	sync := func() {
		t.Helper()
		if out, err := run(t, "sync", "s3://lake/sales/", dir, "--endpoint", srv.Endpoint, "--path-style", "--progress", "none"); err != nil {
			t.Fatalf("sync: %v\n%s", err, out)
		}
	}
	sync()
	srv.PutObject(t, "lake", "sales/a.csv", []byte("second"))
	sync()

	out, err := run(t, "generations", "ls", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[1], "2 ") || !strings.Contains(lines[1], "current") || !strings.HasPrefix(lines[2], "1 ") {
		t.Fatalf("generations ls: %v\n%s", err, out)
	}

	out, err = run(t, "generations", "exec", dir, "--", "sh", "-c", `cat "$PQCACHE_DATA/a.csv"; echo " {data}"`)
	if err != nil || !strings.HasPrefix(out, "second "+filepath.Join(dir, ".pqcache", "generations", "2")) {
		t.Fatalf("generations exec: %v\n%q", err, out)
	}
	out, err = run(t, "generations", "exec", dir, "--generation", "1", "--", "cat", "{data}/a.csv")
	if err != nil || out != "first" {
		t.Fatalf("generations exec --generation 1: %v\n%q", err, out)
	}
	_, err = run(t, "generations", "exec", dir, "--", "sh", "-c", "exit 3")
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("a failing reader's exit status: %v", err)
	}
	_, err = run(t, "generations", "exec", dir, "--", "sh", "-c", "kill -TERM $$")
	if !errors.As(err, &exit) || exit.Code != 128+15 {
		t.Fatalf("a reader killed by SIGTERM: %v, want exit status 143", err)
	}
	// The reader inherits the locked directory (fd 3), so the generation stays held even if pqcache
	// is killed before it.
	out, err = run(t, "generations", "exec", dir, "--", "readlink", "/proc/self/fd/3")
	if err != nil || strings.TrimSpace(out) != filepath.Join(dir, ".pqcache", "generations", "2") {
		t.Fatalf("fd 3 of the reader: %v %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".pqcache", "generations", "current")); err != nil {
		t.Fatal(err)
	}
}
