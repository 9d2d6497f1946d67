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
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/test/s3test"
)

// run executes the pqcache command line in-process and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// useTestCredentials gives the commands a test runs the test S3 server's credentials and region, from
// the environment, as a worker pod has them.
func useTestCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", s3test.Region)
}

// TestSyncCommandLine drives `pqcache sync`, `verify` and `manifest ls` against a real versitygw,
// with credentials from the environment as a worker pod has them.
func TestSyncCommandLine(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/2026/a.csv", []byte("a,b\n1,2\n"))
	srv.PutObject(t, "lake", "sales/2026/b.csv", []byte("a,b\n3,4\n"))
	srv.PutObject(t, "lake", "sales/_SUCCESS", nil)
	useTestCredentials(t)
	dir := filepath.Join(t.TempDir(), "cache")
	common := []string{"--endpoint", srv.Endpoint, "--path-style", "--exclude", "_SUCCESS", "--progress", "none"}

	out, err := run(t, append([]string{"sync", "s3://lake/sales/", dir, "--dry-run"}, common...)...)
	if err != nil || !strings.Contains(out, "copy   2026/a.csv") || !strings.Contains(out, "dry run: 2 to copy") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "2026")); !os.IsNotExist(err) {
		t.Fatalf("dry run copied files")
	}

	report := filepath.Join(t.TempDir(), "report.json")
	out, err = run(t, append([]string{"sync", "s3://lake/sales/", dir, "--json", "--report-file", report}, common...)...)
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, out)
	}
	var rep wire.SyncReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, out)
	}
	if rep.FilesCopied != 2 || rep.Result != wire.ResultSucceeded || rep.Source != "s3://lake/sales/ at "+srv.Endpoint {
		t.Fatalf("report: %+v", rep)
	}
	saved, _ := os.ReadFile(report)
	if !json.Valid(saved) || !bytes.Contains(saved, []byte(`"filesCopied":2`)) || len(saved) > wire.TerminationMessageLimit {
		t.Fatalf("--report-file: %s", saved)
	}
	if strings.Contains(out+string(saved), s3test.SecretKey) {
		t.Fatal("the report contains the secret key")
	}

	out, err = run(t, "manifest", "ls", dir)
	if err != nil || !strings.Contains(out, "2026/a.csv") || !strings.Contains(out, "2026/b.csv") {
		t.Fatalf("manifest ls: %v\n%s", err, out)
	}
	if out, err = run(t, "verify", dir); err != nil || !strings.Contains(out, "0 mismatched, 0 missing, 0 extra") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "2026", "a.csv"), []byte("a,b\n9,9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = run(t, "verify", dir); err == nil || !strings.Contains(out, "content differs: 2026/a.csv") {
		t.Fatalf("verify after corruption: %v\n%s", err, out)
	}

	for _, bad := range [][]string{
		{"sync", "lake/sales", dir},
		{"sync", "s3://lake/sales/", dir, "--parallel", "0"},
		{"sync", "s3://lake/sales/", dir, "--part-size", "1Ki"},
		{"stage", "s3://lake/sales/", dir},
	} {
		if _, err := run(t, bad...); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

// TestBenchCommandLine runs `pqcache bench` with a shell script as the engine and reads its JSON.
func TestBenchCommandLine(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "engine.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n[ \"$1\" = 2 ] && { echo 'no such table' >&2; exit 1; }\nseq 1 \"$1\"; echo \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(dir, "timings.csv")
	// The engine's own queries, named 1 to 3; it reads no table.
	wl := filepath.Join(t.TempDir(), "workload.yaml")
	if err := os.WriteFile(wl, []byte("queries: [{name: '1', sql: '-'}, {name: '2', sql: '-'}, {name: '3', sql: '-'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "bench", "--data", dir, "--workload", wl, "--iterations", "2", "--warmups", "1",
		"--engine", "command", "--command", script+" {query} {data}", "--json", "-", "--csv", csvPath, "--scale-factor", "0.01")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var res struct {
		Queries []struct {
			Name   string
			Status string
			Rows   int64
			Millis []int64
		}
		FailedQueries []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json - is not JSON: %v\n%s", err, out)
	}
	if len(res.Queries) != 3 || res.Queries[0].Rows != 2 || res.Queries[2].Rows != 4 || len(res.Queries[0].Millis) != 2 ||
		res.Queries[1].Status != "Failed" || len(res.FailedQueries) != 1 {
		t.Fatalf("result: %+v", res)
	}
	probe, err := run(t, "bench", "probe", "--data", dir, "--streams", "2", "--json")
	if err != nil || !strings.Contains(probe, `"files":2`) {
		t.Fatalf("bench probe: %v\n%s", err, probe)
	}
	csvData, _ := os.ReadFile(csvPath)
	if lines := strings.Count(string(csvData), "\n"); lines != 1+2+1+2 {
		t.Fatalf("timings.csv has %d lines:\n%s", lines, csvData)
	}
	for _, bad := range [][]string{
		{"bench", "--data", dir, "--engine", "command", "--command", "x", "--queries", "0-3"},
		{"bench", "--data", dir, "--engine", "command"},
		{"bench", "--engine", "command", "--command", "x"},
		{"bench", "--data", dir, "--engine", "command", "--command", "x", "--iterations", "0"},
		{"bench", "--data", dir, "--engine", "spark"},
	} {
		if _, err := run(t, bad...); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

// TestDatagenAndDuckDBBench generates TPC-H SF 0.01 in both layouts with `pqcache datagen`, runs all
// 22 queries with `pqcache bench --engine duckdb` (each query in a fresh process), and checks that
// every query succeeds and returns the same digest on both layouts and across runs.
func TestDatagenAndDuckDBBench(t *testing.T) {
	ext := filepath.Join(t.TempDir(), "tpch.duckdb_extension")
	if err := duckdb.BuildTPCHExtension(context.Background(), ext); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Queries []struct {
			Name   string
			Status string
			Digest string
			Rows   int64
		}
	}
	runBench := func(dir string) result {
		t.Helper()
		out, err := run(t, "bench", "--data", dir, "--queries", "1-22", "--iterations", "1", "--warmups", "0", "--threads", "2", "--json", "-")
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, out)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Queries) != 22 {
			t.Fatalf("%d queries ran", len(r.Queries))
		}
		for _, q := range r.Queries {
			if q.Status != "Succeeded" || q.Digest == "" || q.Rows == 0 {
				t.Fatalf("query %s: %+v", q.Name, q)
			}
		}
		return r
	}
	var results []result
	for _, layout := range []string{"flat", "partitioned", "sized"} {
		dir := filepath.Join(t.TempDir(), layout)
		args := []string{"datagen", "--scale", "0.01", "--out", dir, "--layout", layout, "--files-per-table", "4", "--rows-per-group", "8192", "--tpch-extension", ext}
		if layout == "sized" {
			args = append(args, "--file-size", "256Ki")
		}
		out, err := run(t, args...)
		if err != nil || !strings.Contains(out, "lineitem         60175 rows") {
			t.Fatalf("datagen %s: %v\n%s", layout, err, out)
		}
		results = append(results, runBench(dir))
		if layout == "flat" {
			results = append(results, runBench(dir)) // a second run on the same data
		}
	}
	for i := range 22 {
		a, b, c, d := results[0].Queries[i], results[1].Queries[i], results[2].Queries[i], results[3].Queries[i]
		if a.Digest != b.Digest || a.Digest != c.Digest || a.Digest != d.Digest {
			t.Errorf("query %d digests differ: flat %s, flat again %s, partitioned %s, sized %s", i+1, a.Digest, b.Digest, c.Digest, d.Digest)
		}
	}
	for _, bad := range [][]string{{"--layout", "sized"}, {"--file-size", "1Mi"}, {"--layout", "sized", "--file-size", "1Ki"}} {
		if out, err := run(t, append([]string{"datagen", "--scale", "0.01", "--out", t.TempDir(), "--tpch-extension", ext}, bad...)...); err == nil {
			t.Errorf("datagen %v was accepted:\n%s", bad, out)
		}
	}
	if _, err := run(t, "datagen", "--out", t.TempDir(), "--tpch-extension", "/nonexistent"); err == nil {
		t.Error("a missing extension was accepted")
	}
}
