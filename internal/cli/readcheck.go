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

// Two hidden commands that prove what readers of a refreshing Dataset see: `testdata marks` writes a
// table whose every row carries the marker of the refresh that wrote it, and `read-check` queries it
// in a loop with DuckDB, as a reader pod would, and counts queries that failed or saw rows of two
// refreshes at once. The e2e suite runs them on the local cluster.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/cache/generations"
)

func newTestdataCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "testdata", Short: "Write data sets that tests check readers against", Hidden: true}
	var (
		out                 string
		marker              int64
		partitions, rows    int
		skipPartitionNumber int
		versions            int
	)
	marks := &cobra.Command{
		Use:   "marks --out DIR --marker K",
		Short: "Write DIR/marks/part=N/data.parquet, every row carrying the marker K",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out is required")
			}
			db, err := duckdb.Open(1)
			if err != nil {
				return err
			}
			defer db.Close()
			write := func(out string, marker int64, skip int) error {
				for p := range partitions {
					if p == skip {
						continue
					}
					dir := filepath.Join(out, "marks", fmt.Sprintf("part=%d", p))
					if err := os.MkdirAll(dir, 0o755); err != nil {
						return err
					}
					q := fmt.Sprintf(`COPY (SELECT %d::BIGINT AS marker, %d AS part, range AS v FROM range(%d)) TO '%s' (FORMAT parquet)`,
						marker, p, rows, filepath.Join(dir, "data.parquet"))
					if _, err := db.ExecContext(cmd.Context(), q); err != nil {
						return fmt.Errorf("writing partition %d: %w", p, err)
					}
				}
				return nil
			}
			if versions == 0 {
				return write(out, marker, skipPartitionNumber)
			}
			// Versions 1..N under OUT/vK, version K marked K: each one rewrites every partition, and
			// from version 2 on leaves one out in turn (a partition deleted, and back the next time).
			for k := 1; k <= versions; k++ {
				skip := -1
				if k > 1 {
					skip = k % partitions
				}
				if err := write(filepath.Join(out, fmt.Sprintf("v%d", k)), int64(k), skip); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := marks.Flags()
	f.StringVar(&out, "out", "", "Directory to write into.")
	f.Int64Var(&marker, "marker", 1, "The marker every row carries.")
	f.IntVar(&partitions, "partitions", 4, "Partitions (files).")
	f.IntVar(&rows, "rows", 10000, "Rows per partition.")
	f.IntVar(&skipPartitionNumber, "skip", -1, "A partition to leave out (deleted by this refresh).")
	f.IntVar(&versions, "versions", 0, "Write versions 1..N into OUT/v1...OUT/vN instead, version K marked K, each leaving out partition K mod partitions (from version 2).")
	cmd.AddCommand(marks, newLagCommand())
	return cmd
}

// readCheckReport is what read-check found.
type readCheckReport struct {
	Queries int `json:"queries"`
	Errors  int `json:"errors"`
	// Mixed counts queries that saw rows of more than one marker, or an incomplete partition.
	Mixed int `json:"mixed"`
	// Markers are the distinct markers the queries saw, in the order first seen.
	Markers    []int64  `json:"markers"`
	FirstError string   `json:"firstError,omitempty"`
	Generation []string `json:"generations,omitempty"`
}

func newReadCheckCommand() *cobra.Command {
	var (
		data, reportFile string
		untilMarker      int64
		duration         time.Duration
		rows             int
		pinned           bool
	)
	cmd := &cobra.Command{
		Use:    "read-check --data DIR --duration 2m",
		Short:  "Query DIR/marks in a loop with DuckDB and count failed and mixed answers",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := duckdb.Open(1)
			if err != nil {
				return err
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			rc := readChecker{db: db, data: data, pinned: pinned, rows: rows, untilMarker: untilMarker}
			rep := &rc.rep
			end := time.Now().Add(duration)
			for time.Now().Before(end) && cmd.Context().Err() == nil && (untilMarker == 0 || rc.lastSeen < 3) {
				rep.Queries++
				if err := rc.once(cmd.Context()); err != nil {
					rep.Errors++
					if rep.FirstError == "" {
						rep.FirstError = strings.TrimSpace(err.Error())
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			out, _ := json.Marshal(rep)
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			if reportFile != "" {
				return os.WriteFile(reportFile, out, 0o644)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "/data", "The Dataset's volume: each query holds its current generation (.pqcache/generations).")
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "How long to keep querying (at most, with --until-marker).")
	cmd.Flags().Int64Var(&untilMarker, "until-marker", 0, "Stop once three queries saw only this marker (the last refresh).")
	cmd.Flags().IntVar(&rows, "rows", 10000, "Rows per partition that `testdata marks` wrote.")
	cmd.Flags().BoolVar(&pinned, "pinned", false, "DIR is one generation, held for as long as it is mounted (the CSI driver's volume): query it as it is.")
	cmd.Flags().StringVar(&reportFile, "report-file", "", "Also write the findings (JSON) here, e.g. /dev/termination-log.")
	return cmd
}

// readChecker is read-check's loop state: what it queries, and what it found so far.
type readChecker struct {
	db          *sql.DB
	data        string
	pinned      bool
	rows        int
	untilMarker int64
	rep         readCheckReport
	// lastSeen counts the queries that saw only untilMarker.
	lastSeen int
}

// once runs one query over data: the current generation, held for the query's length, or with pinned
// the directory as it is (a CSI volume of one generation). It counts a mixed answer and notes the
// markers and generations seen.
func (rc *readChecker) once(ctx context.Context) error {
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
