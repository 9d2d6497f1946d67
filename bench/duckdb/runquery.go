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
	"fmt"
	"io"
	"strings"
)

// RunQuery runs one SQL query on a fresh in-process database of threads threads (0: DuckDB's default)
// and writes a header and the rows to w, tab-separated, each value in its canonical form (EachRow):
// `pqcache query`, whose output scripts and the e2e suite compare.
func RunQuery(ctx context.Context, threads int, query string, w io.Writer) error {
	db, err := Open(threads)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // an in-process engine that only read
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer func() { _ = rows.Close() }() // only read; EachRow reports the rows' error
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, strings.Join(cols, "\t")); err != nil {
		return err
	}
	return EachRow(rows, func(fields []string) error {
		_, err := fmt.Fprintln(w, strings.Join(fields, "\t"))
		return err
	})
}
