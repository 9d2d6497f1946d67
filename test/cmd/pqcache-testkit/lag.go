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

// `pqcache-testkit lag` measures the freshness an event-driven refresh gives: it writes objects into
// a bucket at a steady rate and watches a directory that a refresh keeps (pqcache watch, or a
// Dataset's volume mounted read-only) for each to appear, timing each from the end of its PUT to its
// publication. The benchmarks run it standalone and in a pod of the local cluster.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/cache/watch"
)

func newLagCommand() *cobra.Command {
	var (
		f                    wire.S3Access
		bucket, prefix, data string
		rate                 float64
		count, size          int
		timeout              time.Duration
		reportFile           string
	)
	cmd := &cobra.Command{
		Use:   "lag --bucket B --prefix P --data DIR --rate R --count N",
		Short: "Write N objects at R per second under P and time each until it is published in DIR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bucket == "" || data == "" || rate <= 0 || count <= 0 {
				return errors.New("--bucket, --data, a positive --rate and --count are required")
			}
			ctx := cmd.Context()
			store, err := s3store.New(ctx, s3store.Config{Bucket: bucket, Region: f.Region, Endpoint: f.Endpoint, PathStyle: f.PathStyle})
			if err != nil {
				return err
			}
			rep, err := watch.MeasureLag(ctx, store, prefix, data, rate, count, size, timeout)
			if rep == nil {
				return err
			}
			out, _ := json.Marshal(rep)
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			if reportFile != "" {
				if werr := os.WriteFile(reportFile, out, 0o644); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	f.Bind(fl, "")
	fl.StringVar(&bucket, "bucket", "", "The bucket.")
	fl.StringVar(&prefix, "prefix", "", "Where the refreshed directory's prefix starts (objects go to PREFIX lag-RUN/NNNNNN.bin).")
	fl.StringVar(&data, "data", "", "The directory the refresh keeps, where PREFIX's objects appear.")
	fl.Float64Var(&rate, "rate", 1, "Objects written per second.")
	fl.IntVar(&count, "count", 30, "Objects to write.")
	fl.IntVar(&size, "size", 4096, "Bytes per object.")
	fl.DurationVar(&timeout, "timeout", time.Minute, "How long to wait for the last object after it was written.")
	fl.StringVar(&reportFile, "report-file", "", "Also write the figures (JSON) here, e.g. /dev/termination-log.")
	return cmd
}
