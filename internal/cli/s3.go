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

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
)

// newS3Command is a small loader for demos and tests: it puts generated data into a bucket and
// changes it, from places that have pqcache but no other S3 client (its image, a pod of the e2e suite).
// It is not meant to replace a general S3 client.
func newS3Command() *cobra.Command {
	var f wire.S3Access
	cmd := &cobra.Command{
		Use:   "s3",
		Short: "Put files into a bucket and delete them (for loading demo and test data)",
	}
	f.Bind(cmd.PersistentFlags(), "")
	cmd.AddCommand(newS3PutCommand(&f), newS3RmCommand(&f))
	return cmd
}

func newS3PutCommand(f *wire.S3Access) *cobra.Command {
	var (
		parallel   int
		reportFile string
	)
	put := &cobra.Command{
		Use:   "put SRC s3://BUCKET/PREFIX/",
		Short: "Upload a file, or a directory's files under PREFIX/ (creating the bucket if needed)",
		Example: `  pqcache s3 put ./tpch s3://demo/tpch/ --endpoint http://127.0.0.1:7070 --path-style
  pqcache s3 put part.parquet s3://demo/tpch/lineitem/batch=3/part.parquet --endpoint ...`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			bucket, key, err := parseS3URL(args[1])
			if err != nil {
				return err
			}
			cfg := s3store.Config{Bucket: bucket, Region: f.Region, Endpoint: f.Endpoint, PathStyle: f.PathStyle}
			files, bytes, err := s3store.PutTree(cmd.Context(), cfg, args[0], key, parallel)
			if files == 0 && err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "put %d files (%d bytes) into s3://%s/%s\n", files, bytes, bucket, key)
			if reportFile != "" {
				report := fmt.Appendf(nil, `{"files":%d,"bytes":%d}`, files, bytes)
				err = errors.Join(err, os.WriteFile(reportFile, report, 0o644))
			}
			return err
		},
	}
	put.Flags().IntVar(&parallel, "parallel", 8, "Concurrent uploads.")
	put.Flags().StringVar(&reportFile, "report-file", "", `Also write {"files":N,"bytes":B} to this file (a pod's /dev/termination-log).`)
	return put
}

func newS3RmCommand(f *wire.S3Access) *cobra.Command {
	return &cobra.Command{
		Use:   "rm s3://BUCKET/KEY...",
		Short: "Delete objects",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				bucket, key, err := parseS3URL(arg)
				if err != nil {
					return err
				}
				if key == "" || strings.HasSuffix(key, "/") {
					return fmt.Errorf("%s names no object: rm deletes single objects", arg)
				}
				store, err := s3store.New(cmd.Context(), s3store.Config{Bucket: bucket, Region: f.Region, Endpoint: f.Endpoint, PathStyle: f.PathStyle})
				if err != nil {
					return err
				}
				if err := store.Delete(cmd.Context(), key); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", arg)
			}
			return nil
		},
	}
}
