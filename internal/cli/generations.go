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
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/generations"
)

// ExitError carries the exit status of a command pqcache ran (generations exec), for main to exit
// with.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// DataEnv is the environment variable `generations exec` sets to the held generation's directory.
const DataEnv = generations.DataEnv

func newGenerationsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generations",
		Short: "List the whole generations a cache keeps, or run a reader on one",
		Long: `A sync publishes each generation of the data as a whole tree, DIR/.pqcache/generations/N, with
DIR/.pqcache/generations/current naming the newest: a reader that reads one tree sees one
consistent data set, whatever refreshes run meanwhile. A generation a reader holds is never removed.`,
	}
	cmd.AddCommand(newGenerationsLsCommand(), newGenerationsExecCommand())
	return cmd
}

func newGenerationsLsCommand() *cobra.Command {
	var jsonOut bool
	ls := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the generations DIR keeps, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kept, current, err := generations.List(args[0])
			if err != nil {
				return err
			}
			if jsonOut {
				data, _ := json.MarshalIndent(map[string]any{"current": current, "kept": kept}, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GENERATION\tFILES\tSIZE\tPUBLISHED\t")
			for _, k := range kept {
				mark := ""
				if k.Generation == current {
					mark = "current"
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", k.Generation, k.Files, wire.Bytes(k.Bytes), k.Published.Format(time.RFC3339), mark)
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&jsonOut, "json", false, "Print JSON.")
	return ls
}

func newGenerationsExecCommand() *cobra.Command {
	var generation int64
	run := &cobra.Command{
		Use:   "exec DIR [--generation N] -- COMMAND [ARGS...]",
		Short: "Run COMMAND on one generation of DIR, held while it runs",
		Long: `exec holds the current generation of DIR (or --generation N), so that no refresh removes it, and
runs COMMAND with ` + DataEnv + ` set to its directory; {data} in ARGS is replaced by it too. The
exit status is COMMAND's. DIR may be mounted read-only.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: pqcache generations exec DIR -- COMMAND [ARGS...]")
			}
			lease, err := generations.Hold(args[0], generation)
			if err != nil {
				return err
			}
			defer lease.Release()
			return execHolding(cmd, lease, args[1:])
		},
	}
	run.Flags().Int64Var(&generation, "generation", 0, "The generation to hold (default: the current one).")
	return run
}

// execHolding runs args on the generation lease holds (generations.Lease.Exec); the child's failing
// exit status becomes an ExitError, once the lease is released (the process exits with it, past any
// deferred release).
func execHolding(cmd *cobra.Command, lease *generations.Lease, args []string) error {
	code, exited, err := lease.Exec(cmd.Context(), args, generations.Stdio{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr()})
	if err != nil || !exited || code == 0 {
		return err
	}
	lease.Release()
	cmd.SilenceErrors = true
	return &ExitError{Code: code}
}
