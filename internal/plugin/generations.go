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

package plugin

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
)

func (o *options) generationsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "generations (NAME | dataset/NAME)",
		Short: "The whole generations of a Dataset's data its volume keeps for readers, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ds, err := o.dataset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			g := ds.Status.Generations
			if done, err := o.printObject(cmd.OutOrStdout(), g); done {
				return err
			}
			if g == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "Dataset %s/%s keeps no generations (spec.sync.keepGenerations: 0, or nothing synced yet).\n", ds.Namespace, ds.Name)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GENERATION\tFILES\tSIZE\tPUBLISHED\t")
			now := o.now()
			for _, k := range g.Kept {
				published, mark := "-", ""
				if k.Published != nil {
					published = ago(now, k.Published.Time)
				}
				if k.Generation == g.Current {
					mark = "current"
				}
				if k.Pinned {
					mark += " pinned by a BenchRun"
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", k.Generation, k.Files, wire.Quantity(k.Bytes), published, mark)
			}
			fmt.Fprintf(tw, "\nOlder generations take %s beyond the current one.\n", wire.Quantity(g.ExtraBytes))
			return tw.Flush()
		},
	}
}
