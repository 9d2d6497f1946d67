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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/report"
	"github.com/pqcache/pqcache/worker"
)

func newReportCommand() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "report RESULT.json|BENCHRUN.yaml... [-o report.html]",
		Short: "Compare bench results: a self-contained HTML page with charts, or Markdown tables",
		Long: `Compare bench results: a self-contained HTML page with charts, or Markdown tables.

Each file is the JSON of 'pqcache bench --json', or a BenchRun as kubectl prints it
('kubectl get benchrun NAME -o yaml', or -o json; a List of BenchRuns too): each of its
results (one per configuration and input) becomes one column.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []*wire.BenchResult
			for _, p := range args {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rs, err := readResults(data)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				results = append(results, rs...)
			}
			return writeBenchReport(cmd.OutOrStdout(), out, format, results)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "File to write (default: stdout).")
	cmd.Flags().StringVar(&format, "format", "html", "html (a page with charts) or markdown.")
	return cmd
}

// writeBenchReport writes the report of results in format to the file out, or to stdout when out is "" or
// "-". A file's Close error is returned with the rest: a page cut short (a full disk) must not pass
// for written.
func writeBenchReport(stdout io.Writer, out, format string, results []*wire.BenchResult) (err error) {
	w := stdout
	if out != "" && out != "-" {
		f, createErr := os.Create(out)
		if createErr != nil {
			return createErr
		}
		defer func() { err = errors.Join(err, f.Close()) }() // err: the named result
		w = f
	}
	switch format {
	case "html":
		return report.WriteHTML(w, results)
	case "markdown":
		return report.WriteMarkdown(w, results)
	}
	return fmt.Errorf("--format %q: want html or markdown", format)
}

func newProbeCommand() *cobra.Command {
	var (
		data     string
		streams  int
		maxBytes int64
		jsonOut  bool
		s3       wire.S3Access
	)
	cmd := &cobra.Command{
		Use:   "probe --data DIR|s3://BUCKET/PREFIX [--streams 8]",
		Short: "Read every file under DIR (or object under an S3 prefix) once with parallel sequential streams and report the throughput",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return errors.New("--data is required")
			}
			src, err := worker.ProbeInput(cmd.Context(), data, "", nil, s3)
			if err != nil {
				return err
			}
			r, err := bench.ProbeFrom(cmd.Context(), src, streams, maxBytes)
			if err != nil {
				return err
			}
			if jsonOut {
				b, _ := json.Marshal(r)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d files, %d bytes in %d ms with %d streams: %.1f MiB/s\n",
				r.Files, r.Bytes, r.Millis, r.Streams, float64(r.BytesPerSecond)/(1<<20))
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "Directory to read (the input path: a cache volume, a bucket mount, ...), or s3://bucket/prefix.")
	cmd.Flags().IntVar(&streams, "streams", 8, "Files read at once.")
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", -1, "Stop after this many bytes (-1: read every file once).")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "Print the result as JSON.")
	registerS3Endpoint(cmd, &s3, "With s3:// data")
	return cmd
}

// newInstallRunnerCommand copies the static runner (pqcache-runner, beside this binary) into a
// directory shared with another image's container: how a BenchRun measures any engine image, as
// Tekton and Argo inject their entrypoints. The image has no shell or cp, so pqcache does the copy.
func newInstallRunnerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "install-runner DIR",
		Short:  "Copy the static pqcache-runner into DIR (used by BenchRun Jobs for engine images)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src := filepath.Join(filepath.Dir(self), runnerName)
			data, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("reading the runner: %w", err)
			}
			// Written inside DIR only, whatever links the shared directory holds.
			dir, err := os.OpenRoot(args[0])
			if err != nil {
				return err
			}
			defer func() { _ = dir.Close() }() // the directory's handle; the file is checked below
			if err := dir.WriteFile(runnerName+".tmp", data, 0o755); err != nil {
				return err
			}
			return dir.Rename(runnerName+".tmp", runnerName)
		},
	}
}

// runnerName is the static build of pqcache (CGO_ENABLED=0: no DuckDB, runs on any Linux image).
const runnerName = "pqcache-runner"
