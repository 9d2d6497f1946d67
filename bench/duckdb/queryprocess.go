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
	"bufio"
	"context"
	"errors"
	"io"
	"os"

	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/workload"
)

// QueryProcess is one DuckDB query process (`pqcache bench-query`, which bench starts for each query
// or session): the resolved workload it reads, the queries it runs in turn, and its DuckDB.
type QueryProcess struct {
	// Workload is the resolved workload's file (JSON), as bench writes it.
	Workload string
	Queries  []string
	// Threads (0: one per CPU the process may use) and MemoryLimit (MemoryLimitAuto, 0 for DuckDB's
	// default, or bytes) configure DuckDB (ProcessConfig); Settings are NAME=VALUE settings on top.
	Threads     int
	MemoryLimit int64
	Settings    []string
	// HTTPFS is the httpfs extension, for s3:// files ("": the default places).
	HTTPFS string
}

// Run opens DuckDB, maps the workload's tables, reports ready, and runs the queries in turn, each
// timed and its rows printed on out after it, as the timing protocol says (docs/bench.md).
func (p QueryProcess) Run(ctx context.Context, out io.Writer) error {
	r, err := workload.Read(p.Workload)
	if err != nil {
		return err
	}
	if len(p.Queries) == 0 {
		return errors.New("no query to run")
	}
	for _, name := range p.Queries {
		if _, err := r.Query(name); err != nil {
			return err
		}
	}
	cfg, err := ProcessConfig(p.Threads, p.MemoryLimit)
	if err != nil {
		return err
	}
	db, err := OpenConfig(cfg)
	if err != nil {
		return err
	}
	// The database only runs read-only queries; its spill directory is scratch space.
	defer func() { _ = os.RemoveAll(cfg.TempDir) }()
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	if err := Prepare(ctx, db, r, p.Settings, p.HTTPFS); err != nil {
		return err
	}
	tw := bench.NewTimingWriter()
	if err := tw.Ready(); err != nil {
		return err
	}
	return RunQueries(ctx, db, r, p.Queries, bufio.NewWriter(out), tw)
}
