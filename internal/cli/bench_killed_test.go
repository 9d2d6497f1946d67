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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/testfiles"
)

// TestARunnerKilledBetweenQueriesLeavesWhatItMeasured runs `pqcache bench` as a process whose engine
// kills it (SIGKILL, as the kernel's OOM killer does) while the second query runs: the summary file,
// a pod's termination message, still holds the first query's result and names the two it did not
// finish, which the controller then reports as failed.
func TestARunnerKilledBetweenQueriesLeavesWhatItMeasured(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "t", "part.parquet"), testfiles.Parquet(t, 100, 50, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	workload := filepath.Join(dir, "workload.yaml")
	if err := os.WriteFile(workload, []byte("name: killed\ntables:\n  t:\n    path: t/*.parquet\nqueries:\n"+
		"- name: q1\n  sql: select 1\n- name: q2\n  sql: select 2\n- name: q3\n  sql: select 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	engine := filepath.Join(dir, "engine.sh")
	// The engine's parent is the runner: at q2 it kills it, and the runner writes nothing more.
	if err := os.WriteFile(engine, []byte("#!/bin/sh\nif [ \"$1\" = q2 ]; then kill -9 $PPID; sleep 5; fi\necho \"row-$1|x\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "termination-log")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "bench", "--data", filepath.Join(dir, "data"), "--workload", workload,
		"--engine", "command", "--command", engine+" {query}", "--iterations", "1", "--warmups", "0", "--report-file", summary)
	cmd.Env = append(os.Environ(), envAsPqcache+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the runner was not killed:\n%s", out)
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("no summary left behind: %v\n%s", err, out)
	}
	res, err := wire.DecodeBenchSummary(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Queries) != 1 || res.Queries[0].Name != "q1" || res.Queries[0].Status != wire.StatusSucceeded || !slices.Equal(res.Unfinished, []string{"q2", "q3"}) {
		t.Fatalf("the summary left: queries %+v, unfinished %v", res.Queries, res.Unfinished)
	}
}
