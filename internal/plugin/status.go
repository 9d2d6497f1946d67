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
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

func (o *options) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Datasets (size, freshness, generations) and BenchRuns (progress) at a glance",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			var datasets datav1alpha1.DatasetList
			if err := c.List(cmd.Context(), &datasets, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("listing datasets: %w", err)
			}
			var runs datav1alpha1.BenchRunList
			if err := c.List(cmd.Context(), &runs, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("listing benchruns: %w", err)
			}
			if done, err := o.printObject(cmd.OutOrStdout(), map[string]any{"datasets": datasets.Items, "benchRuns": runs.Items}); done {
				return err
			}
			return o.printStatus(cmd.OutOrStdout(), datasets.Items, runs.Items)
		},
	}
}

// printStatus writes the two tables people read.
func (o *options) printStatus(w io.Writer, datasets []datav1alpha1.Dataset, runs []datav1alpha1.BenchRun) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	now := o.now()
	if len(datasets) == 0 {
		fmt.Fprintln(tw, "No Datasets.")
	} else {
		fmt.Fprintln(tw, o.prefix("NAMESPACE\t")+"DATASET\tREADY\tFILES\tSIZE\tSYNCED\tNEXT LISTING\tGENERATIONS\tREASON")
		for _, ds := range datasets {
			files, size, synced, next, gens := "-", "-", "never", "-", "-"
			if m := ds.Status.Manifest; m != nil {
				files, size = strconv.FormatInt(m.Files, 10), wire.Quantity(m.Bytes)
			}
			if t := ds.Status.LastSuccessfulSyncTime; t != nil {
				synced = ago(now, t.Time)
			}
			if t := ds.Status.NextSyncTime; t != nil {
				next = ago(now, t.Time)
			}
			if g := ds.Status.Generations; g != nil {
				gens = fmt.Sprintf("%d (current %d)", len(g.Kept), g.Current)
			}
			if r := ds.Status.Replicas; r != nil {
				// Per-node copies: how many hold the current generation, of how many asked for.
				gens = fmt.Sprintf("copies %s (current %d)", r.ReadyOfDesired, r.Generation)
			}
			ready, reason := condition(ds.Status.Conditions, datav1alpha1.ConditionReady)
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.prefix(ds.Namespace+"\t"), ds.Name, ready, files, size, synced, next, gens, reason)
		}
	}
	fmt.Fprintln(tw)
	if len(runs) == 0 {
		fmt.Fprintln(tw, "No BenchRuns.")
		return tw.Flush()
	}
	fmt.Fprintln(tw, o.prefix("NAMESPACE\t")+"BENCHRUN\tDATASET\tWORKLOAD\tQUERIES\tSUCCEEDED\tPROGRESS\tDURATION\tREASON")
	for _, r := range runs {
		ok, reason := condition(r.Status.Conditions, datav1alpha1.ConditionSucceeded)
		workload := r.Status.Workload
		if workload == "" {
			workload = "-"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", o.prefix(r.Namespace+"\t"), r.Name, r.Spec.DatasetRef.Name, workload,
			r.Status.Queries, ok, dash(r.Status.Progress), dash(r.Status.Duration), reason)
	}
	return tw.Flush()
}

// prefix is s with -A (the namespace column), else nothing.
func (o *options) prefix(s string) string {
	if o.allNamespaces {
		return s
	}
	return ""
}

// condition is a condition's status and reason, or "Unknown" and "-" before there is one.
func condition(conds []metav1.Condition, t string) (string, string) {
	c := meta.FindStatusCondition(conds, t)
	if c == nil {
		return "Unknown", "-"
	}
	return string(c.Status), c.Reason
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
