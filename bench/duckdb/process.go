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

// What one query process (`pqcache bench-query`) sets up before it runs its query: its DuckDB's
// threads, memory limit and spill directory, the settings, the loadable extensions, the tables.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/bench/memory"
	"github.com/pqcache/pqcache/bench/workload"
)

// Where the loadable extensions are found, besides the flags and beside the binary.
const (
	EnvTPCH   = "PQCACHE_TPCH_EXTENSION"
	EnvHTTPFS = "PQCACHE_HTTPFS_EXTENSION"
)

// MemoryLimitAuto asks ProcessConfig for a share of the container's cgroup memory limit
// (MemoryLimitFor), or DuckDB's default outside a limited cgroup.
const MemoryLimitAuto int64 = -1

// ProcessConfig is the DuckDB of one query process: threads (0: GOMAXPROCS, which counts the
// cgroup's CPU quota where DuckDB would count the host's CPUs), the memory limit in bytes
// (MemoryLimitAuto, or 0 for DuckDB's default), and a private spill directory under $TMPDIR (the
// working directory of a container is often read-only), which the caller removes.
func ProcessConfig(threads int, memoryLimit int64) (Config, error) {
	cfg := Config{Threads: threads}
	if cfg.Threads <= 0 {
		cfg.Threads = runtime.GOMAXPROCS(0)
	}
	cfg.MemoryLimit = memoryLimit
	if memoryLimit == MemoryLimitAuto {
		cfg.MemoryLimit = 0
		if limit, _, ok := memory.Limit(); ok {
			cfg.MemoryLimit = MemoryLimitFor(limit)
		}
	}
	dir, err := os.MkdirTemp("", "pqcache-duckdb-")
	if err != nil {
		return cfg, fmt.Errorf("creating DuckDB's spill directory: %w", err)
	}
	cfg.TempDir = dir
	return cfg, nil
}

// Prepare applies the settings (NAME=VALUE), loads httpfs (found by FindExtension from the httpfs
// flag) when a table is in a bucket, and maps the tables.
func Prepare(ctx context.Context, db *sql.DB, r *workload.Resolved, settings []string, httpfs string) error {
	for _, s := range settings {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("--setting %q: want NAME=VALUE", s)
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SET %s = %s", name, settingValue(value))); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	if r.ReadsS3() {
		ext, err := FindExtension("httpfs", httpfs, EnvHTTPFS)
		if err != nil {
			return err
		}
		if err := LoadHTTPFS(ctx, db, ext, r.S3); err != nil {
			return err
		}
	}
	return CreateTables(ctx, db, r)
}

// settingValue writes a setting's value for SET: numbers and booleans as they are, anything else
// quoted.
func settingValue(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil || v == "true" || v == "false" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// TPCHExtension finds the loadable tpch extension: the flag, $PQCACHE_TPCH_EXTENSION, or beside the binary.
func TPCHExtension(flag string) (string, error) { return FindExtension("tpch", flag, EnvTPCH) }

// FindExtension finds the loadable extension name: the flag (--NAME-extension), the environment
// variable env, or the places the image and `make build` put it beside the binary.
func FindExtension(name, flag, env string) (string, error) {
	file := name + ".duckdb_extension"
	candidates := []string{flag, os.Getenv(env)}
	if self, err := os.Executable(); err == nil {
		dir := filepath.Dir(self)
		candidates = append(candidates, filepath.Join(dir, file), filepath.Join(dir, "..", "lib", "pqcache", file))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil { //nolint:gosec // G703: the extension the user names by flag or environment, or one beside this binary
			return c, nil
		}
		if c == flag {
			return "", fmt.Errorf("--%s-extension %s: not found", name, c)
		}
	}
	return "", fmt.Errorf("no %s extension found: run `make %s-extension`, or set %s", name, name, env)
}
