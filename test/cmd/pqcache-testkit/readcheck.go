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

package main

// Two commands that prove what readers of a refreshing Dataset see (package test/readcheck): `marks`
// writes the marked table, `read-check` queries it in a loop. The e2e suite runs them on the local
// cluster.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/test/readcheck"
)

func newMarksCommand() *cobra.Command {
	var m readcheck.Marks
	cmd := &cobra.Command{
		Use:   "marks --out DIR --marker K",
		Short: "Write DIR/marks/part=N/data.parquet, every row carrying the marker K",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if m.Out == "" {
				return errors.New("--out is required")
			}
			return readcheck.WriteMarks(cmd.Context(), m)
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Out, "out", "", "Directory to write into.")
	f.Int64Var(&m.Marker, "marker", 1, "The marker every row carries.")
	f.IntVar(&m.Partitions, "partitions", 4, "Partitions (files).")
	f.IntVar(&m.Rows, "rows", 10000, "Rows per partition.")
	f.IntVar(&m.Skip, "skip", -1, "A partition to leave out (deleted by this refresh).")
	f.IntVar(&m.Versions, "versions", 0, "Write versions 1..N into OUT/v1...OUT/vN instead, version K marked K, each leaving out partition K mod partitions (from version 2).")
	return cmd
}

func newReadCheckCommand() *cobra.Command {
	var (
		c          readcheck.Config
		reportFile string
	)
	cmd := &cobra.Command{
		Use:   "read-check --data DIR --duration 2m",
		Short: "Query DIR/marks in a loop with DuckDB and count failed and mixed answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := readcheck.Run(cmd.Context(), c)
			if err != nil {
				return err
			}
			out, _ := json.Marshal(rep)
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			if reportFile != "" {
				return os.WriteFile(reportFile, out, 0o644)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&c.Data, "data", "/data", "The Dataset's volume: each query holds its current generation (.pqcache/generations).")
	cmd.Flags().DurationVar(&c.Duration, "duration", time.Minute, "How long to keep querying (at most, with --until-marker).")
	cmd.Flags().Int64Var(&c.UntilMarker, "until-marker", 0, "Stop once three queries saw only this marker (the last refresh).")
	cmd.Flags().IntVar(&c.Rows, "rows", 10000, "Rows per partition that `marks` wrote.")
	cmd.Flags().BoolVar(&c.Pinned, "pinned", false, "DIR is one generation, held for as long as it is mounted (the CSI driver's volume): query it as it is.")
	cmd.Flags().StringVar(&reportFile, "report-file", "", "Also write the findings (JSON) here, e.g. /dev/termination-log.")
	return cmd
}
