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

// Package readcheck proves what readers of a refreshing Dataset see: WriteMarks writes a table whose
// every row carries the marker of the refresh that wrote it, and Run queries it in a loop with
// DuckDB, as a reader pod would, counting queries that failed or saw rows of two refreshes at once.
// The test kit's commands `pqcache-testkit marks` and `read-check` run them; the e2e suite runs
// those on the local cluster.
package readcheck

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/cache/generations"
)

// Marks is the marked table to write: Partitions files of Rows rows each.
type Marks struct {
	Out              string
	Partitions, Rows int
	// Marker is the marker every row carries, and Skip a partition to leave out (deleted by this
	// refresh; -1: none). With Versions > 0 both are ignored: see WriteMarks.
	Marker   int64
	Skip     int
	Versions int
}

// WriteMarks writes OUT/marks/part=N/data.parquet, or with Versions versions 1..N under OUT/vK,
// version K marked K: each one rewrites every partition, and from version 2 on leaves one out in turn
// (a partition deleted, and back the next time).
func WriteMarks(ctx context.Context, m Marks) error {
	db, err := duckdb.Open(1)
	if err != nil {
		return err
	}
	defer db.Close()
	if m.Versions == 0 {
		return writeMarks(ctx, db, m, m.Out, m.Marker, m.Skip)
	}
	for k := 1; k <= m.Versions; k++ {
		skip := -1
		if k > 1 {
			skip = k % m.Partitions
		}
		if err := writeMarks(ctx, db, m, filepath.Join(m.Out, fmt.Sprintf("v%d", k)), int64(k), skip); err != nil {
			return err
		}
	}
	return nil
}

// writeMarks writes one version of the table into out, every row marked marker, partition skip left out.
func writeMarks(ctx context.Context, db *sql.DB, m Marks, out string, marker int64, skip int) error {
	for p := range m.Partitions {
		if p == skip {
			continue
		}
		dir := filepath.Join(out, "marks", fmt.Sprintf("part=%d", p))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		q := fmt.Sprintf(`COPY (SELECT %d::BIGINT AS marker, %d AS part, range AS v FROM range(%d)) TO '%s' (FORMAT parquet)`,
			marker, p, m.Rows, filepath.Join(dir, "data.parquet"))
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("writing partition %d: %w", p, err)
		}
	}
	return nil
}

// Report is what Run found.
type Report struct {
	Queries int `json:"queries"`
	Errors  int `json:"errors"`
	// Mixed counts queries that saw rows of more than one marker, or an incomplete partition.
	Mixed int `json:"mixed"`
	// Markers are the distinct markers the queries saw, in the order first seen.
	Markers    []int64  `json:"markers"`
	FirstError string   `json:"firstError,omitempty"`
	Generation []string `json:"generations,omitempty"`
}

// Config is what Run queries, and for how long.
type Config struct {
	// Data is a Dataset's volume (each query holds its current generation), or with Pinned one
	// generation, held for as long as it is mounted, queried as it is.
	Data   string
	Pinned bool
	// Rows is the rows per partition WriteMarks wrote.
	Rows int
	// UntilMarker stops the loop once three queries saw only this marker (the last refresh); Duration
	// bounds it in any case.
	UntilMarker int64
	Duration    time.Duration
}

// Run queries the marked table every 50 ms until the duration is over, ctx ends, or the last marker
// was seen, and reports what the queries saw. A failed query is counted, not returned.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	db, err := duckdb.Open(1)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rc := checker{db: db, data: cfg.Data, pinned: cfg.Pinned, rows: cfg.Rows, untilMarker: cfg.UntilMarker}
	rep := &rc.rep
	end := time.Now().Add(cfg.Duration)
	for time.Now().Before(end) && ctx.Err() == nil && (cfg.UntilMarker == 0 || rc.lastSeen < 3) {
		rep.Queries++
		if err := rc.once(ctx); err != nil {
			rep.Errors++
			if rep.FirstError == "" {
				rep.FirstError = strings.TrimSpace(err.Error())
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rep, nil
}

// checker is Run's loop state: what it queries, and what it found so far.
type checker struct {
	db          *sql.DB
	data        string
	pinned      bool
	rows        int
	untilMarker int64
	rep         Report
	// lastSeen counts the queries that saw only untilMarker.
	lastSeen int
}

// once runs one query over data: the current generation, held for the query's length, or with pinned
// the directory as it is (a CSI volume of one generation). It counts a mixed answer and notes the
// markers and generations seen.
func (rc *checker) once(ctx context.Context) error {
	dir := rc.data // pinned: one generation already, held by whoever mounted it
	if !rc.pinned {
		lease, err := generations.Hold(rc.data, 0)
		if err != nil {
			return err
		}
		defer lease.Release()
		dir = lease.Dir
		if g := strconv.FormatInt(lease.Generation, 10); !slices.Contains(rc.rep.Generation, g) {
			rc.rep.Generation = append(rc.rep.Generation, g)
		}
	}
	var n, parts, minM, maxM int64
	err := rc.db.QueryRowContext(ctx, fmt.Sprintf(
		`SELECT count(*), count(DISTINCT part), min(marker), max(marker) FROM read_parquet('%s/marks/*/*.parquet')`, dir)).Scan(&n, &parts, &minM, &maxM)
	if err != nil {
		return err
	}
	if minM != maxM || n != parts*int64(rc.rows) {
		rc.rep.Mixed++
	}
	if rc.untilMarker != 0 && minM == rc.untilMarker && maxM == rc.untilMarker {
		rc.lastSeen++ // three queries of the last version, and the reader is done
	}
	for _, m := range []int64{minM, maxM} {
		if !slices.Contains(rc.rep.Markers, m) {
			rc.rep.Markers = append(rc.rep.Markers, m)
		}
	}
	return nil
}
