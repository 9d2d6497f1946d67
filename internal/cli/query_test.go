//go:build cgo

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
	"path/filepath"
	"testing"
	"time"

	"github.com/pqcache/pqcache/test/readcheck"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestQueryAndReadCheckOnAGeneration writes two versions of the marked table, syncs the second, and
// reads it the ways a reader pod would: `pqcache query` on the current generation, and the read check of
// test/readcheck until it has seen the last version.
func TestQueryAndReadCheckOnAGeneration(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	useTestCredentials(t)
	work := t.TempDir()
	if err := readcheck.WriteMarks(t.Context(), readcheck.Marks{Out: work, Marker: 1, Versions: 2, Partitions: 3, Rows: 10, Skip: -1}); err != nil {
		t.Fatalf("writing the marked table: %v", err)
	}
	// Version 2 leaves out partition 2 mod 3 = 2.
	if _, err := os.Stat(filepath.Join(work, "v2", "marks", "part=2")); !os.IsNotExist(err) {
		t.Fatalf("version 2 has the partition it should leave out: %v", err)
	}
	s3 := []string{"--endpoint", srv.Endpoint, "--path-style"}
	if out, err := run(t, append([]string{"s3", "put", filepath.Join(work, "v2"), "s3://lake/marked/"}, s3...)...); err != nil {
		t.Fatalf("s3 put: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "cache")
	if out, err := run(t, append([]string{"sync", "s3://lake/marked/", dir, "--progress", "none"}, s3...)...); err != nil {
		t.Fatalf("sync: %v\n%s", err, out)
	}

	result := filepath.Join(t.TempDir(), "result")
	out, err := run(t, "query", "--data", filepath.Join(dir, ".pqcache", "generations", "current"), "--output", result,
		"SELECT count(*) AS n, min(marker) AS marker FROM read_parquet('{data}/marks/*/*.parquet')")
	if want := "n\tmarker\n20\t2\n"; err != nil || out != want {
		t.Fatalf("query: %v\n%q, want %q", err, out, want)
	}
	if saved, _ := os.ReadFile(result); string(saved) != out {
		t.Fatalf("--output: %q", saved)
	}

	rep, err := readcheck.Run(t.Context(), readcheck.Config{Data: dir, Rows: 10, UntilMarker: 2, Duration: 30 * time.Second})
	if err != nil {
		t.Fatalf("read-check: %v", err)
	}
	if rep.Errors != 0 || rep.Mixed != 0 || rep.Queries != 3 || len(rep.Generation) != 1 || rep.Generation[0] != "1" {
		t.Fatalf("read-check: %+v", rep)
	}

	// --pinned: the directory is one generation as it is, as the CSI driver mounts it.
	rep, err = readcheck.Run(t.Context(), readcheck.Config{Data: filepath.Join(dir, ".pqcache", "generations", "1"), Pinned: true, Rows: 10,
		UntilMarker: 2, Duration: 30 * time.Second})
	if err != nil {
		t.Fatalf("read-check --pinned: %v", err)
	}
	if rep.Errors != 0 || rep.Mixed != 0 || rep.Queries != 3 || len(rep.Generation) != 0 || len(rep.Markers) != 1 || rep.Markers[0] != 2 {
		t.Fatalf("read-check --pinned: %+v", rep)
	}
}
