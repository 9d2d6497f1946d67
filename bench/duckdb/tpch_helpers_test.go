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
	"database/sql"
	"fmt"
	"io"

	"github.com/pqcache/pqcache/bench/queries"
	"github.com/pqcache/pqcache/bench/workload"
)

// createViews makes each TPC-H table a view over its Parquet files in dir, flat or partitioned, as the
// tpch workload resolves them.
func createViews(ctx context.Context, db *sql.DB, dir string) error {
	w, err := workload.Builtin(workload.TPCH)
	if err != nil {
		return err
	}
	r, err := workload.Resolve(ctx, w, nil, workload.Source{Data: workload.Dir(dir)})
	if err != nil {
		return err
	}
	return CreateTables(ctx, db, r)
}

// runQuery runs PDS-H query n and writes its rows to w in the canonical row format, as the runner does.
func runQuery(ctx context.Context, db *sql.DB, n int, w io.Writer) (int64, error) {
	q, err := queries.SQL(n)
	if err != nil {
		return 0, err
	}
	rows, err := RunSQL(ctx, db, q, w)
	if err != nil {
		return 0, fmt.Errorf("query %d: %w", n, err)
	}
	return rows, nil
}
