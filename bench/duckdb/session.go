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

// What a bench query process does once DuckDB is ready: run its queries in turn, each timed from
// the call that runs it to its last row fetched, and print their rows outside that time.

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/canon"
	"github.com/pqcache/pqcache/bench/workload"
)

// RunQueries runs the named queries of r in turn. Each query's rows are fetched whole, which is its
// query time (reported to tw: execution, Parquet and S3 reads, DuckDB's conversion to Go values),
// then written to w in the canonical row format and followed by wire.QueryDelimiter, and w is
// flushed, so that the runner sees each query end when it does.
func RunQueries(ctx context.Context, db *sql.DB, r *workload.Resolved, names []string, w *bufio.Writer, tw *bench.TimingWriter) error {
	for _, name := range names {
		q, err := r.Query(name)
		if err != nil {
			return err
		}
		if q.SQL == "" {
			return fmt.Errorf("query %s has no SQL: DuckDB runs SQL only", q.Name)
		}
		start := time.Now()
		rows, err := queryRetryingSourceChanges(ctx, db, q.Name, q.SQL)
		elapsed := time.Since(start)
		if err != nil {
			return fmt.Errorf("query %s: %w", q.Name, err)
		}
		if err := tw.Query(q.Name, elapsed); err != nil {
			return err
		}
		if err := WriteRows(w, rows); err != nil {
			return err
		}
		if _, err := w.WriteString(wire.QueryDelimiter + "\n"); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// sourceChangeAttempts bounds how often a query whose input files were rewritten under it is run.
const sourceChangeAttempts = 3

// queryRetryingSourceChanges runs query, and runs it again (up to sourceChangeAttempts in all) when
// DuckDB stopped it because a remote file's ETag changed between two of its reads: the bucket was
// rewritten mid-query, as during a refresh over s3://. DuckDB refuses to mix two versions of a file and
// its own message advises a retry, which is what a reader of a changing bucket does. The query's time
// then includes the failed attempts: they are time its user waited. Each retry is said on stderr.
func queryRetryingSourceChanges(ctx context.Context, db *sql.DB, name, query string) ([][]any, error) {
	for attempt := 1; ; attempt++ {
		rows, err := QueryRows(ctx, db, query)
		if err == nil || !SourceChanged(err) || attempt == sourceChangeAttempts || ctx.Err() != nil {
			return rows, err
		}
		fmt.Fprintf(os.Stderr, "query %s: a file changed in the bucket during the query (attempt %d of %d), running it again\n",
			name, attempt, sourceChangeAttempts)
	}
}

// SourceChanged says whether err is DuckDB refusing a remote file whose ETag changed during a query.
func SourceChanged(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "ETag on reading file") && strings.Contains(msg, "remote file has changed")
}

// QueryRows runs query and returns every row's values, materialised.
func QueryRows(ctx context.Context, db *sql.DB, query string) ([][]any, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	// Only read: a failed read shows in rows.Err, not in Close's.
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	ptrs := make([]any, len(cols))
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// WriteRows writes rows in the canonical row format (bench/canon), one per line.
func WriteRows(w io.Writer, rows [][]any) error {
	var fields []string
	for _, vals := range rows {
		fields = fields[:0]
		for _, v := range vals {
			fields = append(fields, format(v))
		}
		if _, err := io.WriteString(w, canon.Row(fields)+"\n"); err != nil {
			return err
		}
	}
	return nil
}
