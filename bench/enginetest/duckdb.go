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

package enginetest

// DuckDB, the reference engine: the test binary re-executed as a DuckDB query process.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
)

// What makes a re-executed test binary a DuckDB query process: the resolved workload and the
// queries to run, comma-separated.
const (
	envWorkload = "PQCACHE_ENGINETEST_DUCKDB_WORKLOAD"
	envQueries  = "PQCACHE_ENGINETEST_DUCKDB_QUERIES"
)

// defaultTimeout bounds one query of a run the suite makes for itself.
const defaultTimeout = 2 * time.Minute

// mainRuns says Main is the test binary's TestMain, so that DuckDB may re-execute it.
var mainRuns bool

// Main is the TestMain of every package that runs the suite or DuckDB(): in a test binary that
// DuckDB() re-executed it runs the queries and exits; otherwise it runs the tests and removes the
// data they generated.
func Main(m *testing.M) {
	if file := os.Getenv(envWorkload); file != "" {
		if err := duckdbProcess(file, strings.Split(os.Getenv(envQueries), ",")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	mainRuns = true
	code := m.Run()
	if dataRoot != "" {
		_ = os.RemoveAll(dataRoot)
	}
	os.Exit(code)
}

// duckdbProcess is `pqcache bench-query`'s DuckDB query process (duckdb.QueryProcess), with two
// threads and the process's memory limit; httpfs comes from $PQCACHE_HTTPFS_EXTENSION when a table is
// in a bucket.
func duckdbProcess(file string, names []string) error {
	p := duckdb.QueryProcess{Workload: file, Queries: names, Threads: 2, MemoryLimit: duckdb.MemoryLimitAuto}
	return p.Run(context.Background(), os.Stdout)
}

// duckdbEngine re-executes the test binary as a DuckDB query process.
type duckdbEngine struct{}

// DuckDB is the built-in DuckDB as a bench.Engine: each process is this test binary re-executed, whose
// TestMain (Main) runs the queries as `pqcache bench-query` does. It runs both isolations.
func DuckDB() bench.Engine { return duckdbEngine{} }

// Name is "duckdb".
func (duckdbEngine) Name() string { return "duckdb" }

// Command re-executes the test binary with the workload and the queries in its environment.
func (duckdbEngine) Command(ctx context.Context, inv bench.Invocation) (*exec.Cmd, error) {
	if !mainRuns {
		return nil, errors.New("enginetest.DuckDB needs enginetest.Main as the test binary's TestMain")
	}
	queries := inv.Queries
	if len(queries) == 0 {
		queries = []string{inv.Query}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// -test.run=^$: were Main not to intercept, the binary would run no test.
	cmd := exec.CommandContext(ctx, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorkload+"="+inv.Workload, envQueries+"="+strings.Join(queries, ","))
	return cmd, nil
}
