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

// Package cli is the pqcache command line, one file per command or family; root.go assembles them:
//
//   - manager.go: `manager`, the operator (controllers, event hub, metrics, probes);
//   - sync.go: `sync`, `stage`, `verify`, `manifest ls`, the sync engine's commands, and watch.go:
//     `watch`, kept fresh by S3 event notifications;
//   - generations.go: `generations ls|exec`, whole generations for readers;
//   - agent.go: `agent`, the node agent (its node's copies of Datasets with spec.replicas, their peer
//     endpoint, and with --csi the CSI driver); peer.go: `peer serve`, and the follower side of
//     `sync --peer`;
//   - benchrun.go: `bench`, the query runner (workload.go: the workload it runs and the tables it
//     finds; probe.go: what a throughput probe reads; bench.go: `report`, `bench probe`,
//     `install-runner`; polars.go: the Polars engine);
//   - duckdb.go, built with cgo: `datagen`, `bench-query`, the embedded DuckDB, and the commands
//     below that need it (noduckdb.go leaves them out of a build without cgo);
//   - query.go: `query`, SQL over a directory; report.go: reading BenchRuns back for `report`;
//   - s3.go: `s3 put|rm`, a loader for demos and tests. The tests' own servers and probes are not
//     here but in test/cmd/pqcache-testkit, which the shipped binary does not link.
//
// The commands a controller starts (sync, stage, bench) bind their flags to the worker contract's
// argument types (api/wire), so the command line a Job runs is the one these commands parse. It is a
// package rather than part of cmd/pqcache so that tests elsewhere can run the exact commands a worker
// pod runs.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/internal/version"
)

// NewRootCommand returns the pqcache command line.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pqcache",
		Short: "Keep Parquet data from S3 cached on volumes, and benchmark the queries that read it",
		// Errors are printed once, by main, without the usage text that hides them.
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
	}
	root.AddCommand(newManagerCommand(), newSyncCommand(), newStageCommand(), newVerifyCommand(), newManifestCommand(), newBenchCommand(), newReportCommand(), newInstallRunnerCommand(), newS3Command(), newWatchCommand(), newGenerationsCommand(), newPeerCommand(), newAgentCommand())
	addDuckDBCommands(root)
	return root
}
