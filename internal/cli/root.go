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

// Package cli is the pqcache command line: the operator (`manager`) and the data-plane commands
// (`sync`, `stage`, `verify`, `manifest`). It is a package rather than part of cmd/pqcache so that tests
// elsewhere can run the exact commands a worker pod runs.
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
	root.AddCommand(newManagerCommand(), newSyncCommand(), newStageCommand(), newVerifyCommand(), newManifestCommand(), newBenchCommand(), newReportCommand(), newInstallRunnerCommand(), newS3Command(), newWatchCommand(), newGenerationsCommand())
	addDuckDBCommands(root)
	return root
}
