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

package duckdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenConfig: threads, memory_limit and temp_directory reach DuckDB, and a memory limit too small
// for a query makes DuckDB fail it with its own out-of-memory error rather than grow past it.
func TestOpenConfig(t *testing.T) {
	ctx := context.Background()
	tmp := filepath.Join(t.TempDir(), "spill dir")
	db, err := OpenConfig(Config{Threads: 3, MemoryLimit: 64 << 20, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var threads int
	var limit, dir string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('threads'), current_setting('memory_limit'), current_setting('temp_directory')").Scan(&threads, &limit, &dir); err != nil {
		t.Fatal(err)
	}
	if threads != 3 || !strings.HasPrefix(limit, "64") || dir != tmp {
		t.Fatalf("threads %d, memory_limit %q, temp_directory %q; want 3, 64 MiB, %s", threads, limit, dir, tmp)
	}
	// One list of 30M integers (240 MB) is a single value: it cannot spill.
	_, err = db.ExecContext(ctx, "SELECT length(list(i)) FROM range(30000000) t(i)")
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "memory") {
		t.Fatalf("a query past the memory limit: %v, want an out-of-memory error", err)
	}
}

func TestMemoryLimitFor(t *testing.T) {
	for limit, want := range map[int64]int64{128 << 20: 72 << 20, 384 << 20: 264 << 20, 4 << 30: 3<<30 - 24<<20, 32 << 20: 16 << 20} {
		if got := MemoryLimitFor(limit); got != want {
			t.Errorf("MemoryLimitFor(%d MiB) = %d MiB, want %d MiB", limit>>20, got>>20, want>>20)
		}
	}
}
