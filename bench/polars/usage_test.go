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

package polars

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/enginetest"
)

// TestUsageErrors: run.py's own mistakes of invocation exit with status 2, before any query runs.
func TestUsageErrors(t *testing.T) {
	e := engine(t)
	data := enginetest.TPCH(t, duckdb.LayoutFlat)
	file := filepath.Join(t.TempDir(), "workload.json")
	if err := enginetest.Resolve(t, enginetest.TPCHWorkload(t), data, "q6").Write(file); err != nil {
		t.Fatal(err)
	}
	runPy := filepath.Join(e.Dir, "run.py")
	for name, args := range map[string][]string{
		"an unknown query":   {runPy, "--workload", file, "--query", "q99"},
		"an unknown engine":  {runPy, "--workload", file, "--query", "q6", "--engine", "gpu"},
		"no workload file":   {runPy, "--workload", filepath.Join(t.TempDir(), "missing.json"), "--query", "q6"},
		"a missing argument": {runPy, "--workload", file},
	} {
		out, err := exec.CommandContext(t.Context(), e.Python, args...).CombinedOutput()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit status 2: %s", name, err, out)
		}
	}
	// The same file and query run.
	if out, err := exec.CommandContext(t.Context(), e.Python, runPy, "--workload", file, "--query", "q6").Output(); err != nil || !strings.HasPrefix(string(out), "1193053.") {
		t.Errorf("q6: %v: %q", err, out)
	}
}
