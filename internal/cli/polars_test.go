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
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestBenchPolarsFromS3 is `pqcache bench --engine polars --data s3://... --endpoint --region
// --path-style` against a real versitygw: the answers are DuckDB's over the same files on disk, on
// Polars' in-memory and streaming engines, with the program and interpreter found by flag or by
// environment; a directory without run.py is refused before any query runs.
func TestBenchPolarsFromS3(t *testing.T) {
	ext := filepath.Join(t.TempDir(), "tpch.duckdb_extension")
	if err := duckdb.BuildTPCHExtension(context.Background(), ext); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tpch")
	if out, err := run(t, "datagen", "--scale", "0.01", "--out", dir, "--layout", "partitioned", "--files-per-table", "2", "--tpch-extension", ext); err != nil {
		t.Fatalf("datagen: %v\n%s", err, out)
	}
	srv := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	s3flags := []string{"--endpoint", srv.Endpoint, "--region", s3test.Region, "--path-style"}
	if out, err := run(t, append([]string{"s3", "put", dir, "s3://lake/tpch/"}, s3flags...)...); err != nil {
		t.Fatalf("s3 put: %v\n%s", err, out)
	}

	digests := func(args ...string) map[string]string {
		t.Helper()
		return benchDigests(t, append([]string{"--queries", "1,6,13,18", "--threads", "2"}, args...)...)
	}
	want := digests("--engine", "duckdb", "--data", dir)
	if len(want) != 4 {
		t.Fatalf("DuckDB answered %d queries, want 4", len(want))
	}
	polarsDir := checkoutPolarsDir(t)
	same := func(what string, got map[string]string) {
		t.Helper()
		for q, d := range want {
			if d == "" || got[q] != d {
				t.Errorf("%s: %s %s, duckdb over the directory %s", what, q, got[q], d)
			}
		}
	}
	same("polars over s3", digests(append([]string{"--engine", "polars", "--polars-dir", polarsDir, "--data", "s3://lake/tpch"}, s3flags...)...))
	// Found through the environment instead, on the streaming engine.
	t.Setenv("PQCACHE_POLARS_DIR", polarsDir)
	same("polars streaming over s3", digests(append([]string{"--engine", "polars", "--polars-engine", "streaming", "--data", "s3://lake/tpch/"}, s3flags...)...))
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	if again := digests("--engine", "polars", "--data", "s3://lake/tpch/", "--region", s3test.Region, "--path-style"); again["q1"] != want["q1"] {
		t.Errorf("q1 with the environment's endpoint: %s, want %s", again["q1"], want["q1"])
	}

	if out, err := run(t, "bench", "--engine", "polars", "--polars-dir", t.TempDir(), "--data", dir); err == nil || !strings.Contains(err.Error(), "run.py") {
		t.Errorf("a Polars directory without run.py was accepted: %v\n%s", err, out)
	}
}

// checkoutPolarsDir is the checkout's Polars engine (bench/polars, run.py), for --polars-dir; the
// interpreter is $PQCACHE_POLARS_PYTHON (make test sets it), else bin/polars-venv, and bench fails
// before any query, saying to run `make polars-env`, when neither has Polars.
func checkoutPolarsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "bench", "polars"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// benchDigests runs `pqcache bench` once per query with args and returns each query's digest by name;
// a query that did not succeed fails the test.
func benchDigests(t *testing.T, args ...string) map[string]string {
	t.Helper()
	out, err := run(t, append([]string{"bench", "--iterations", "1", "--warmups", "0", "--json", "-"}, args...)...)
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	var r struct {
		Queries []struct {
			Name, Status, Digest string
			StderrTail           string
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range r.Queries {
		if q.Status != "Succeeded" {
			t.Errorf("bench %v: %s %s: %s", args, q.Name, q.Status, q.StderrTail)
		}
		got[q.Name] = q.Digest
	}
	return got
}
