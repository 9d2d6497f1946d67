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
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

func (o *options) syncCommand() *cobra.Command {
	var (
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sync (NAME | dataset/NAME) [--wait]",
		Short: "Start a sync now (a new spec.refresh.manual token) and, with --wait, follow it to its end",
		Long: `sync sets spec.refresh.manual to a new token, which starts one listing sync of the Dataset (the
same as editing it by hand: GitOps tools that own the field will set it back). With --wait it shows
the sync's progress and ends with its result: exit status 1 when it failed, with the reason.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ds, err := o.dataset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if ds.Spec.Refresh.Suspend {
				// The operator starts nothing while suspended, a manual token included: a new token would
				// only wait, and fire whenever someone resumes the Dataset.
				return fmt.Errorf("dataset %s/%s is suspended (spec.refresh.suspend: true): no sync starts until it is resumed", ds.Namespace, ds.Name)
			}
			before := lastJob(ds)
			token := "kubectl-pqcache-" + strconv.FormatInt(o.now().UnixNano(), 36)
			orig := ds.DeepCopy()
			ds.Spec.Refresh.Manual = token
			if err := c.Patch(cmd.Context(), ds, client.MergeFrom(orig)); err != nil {
				return fmt.Errorf("setting spec.refresh.manual of %s/%s: %w", ds.Namespace, ds.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dataset %s/%s: sync requested (spec.refresh.manual: %s)\n", ds.Namespace, ds.Name, token)
			if !wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return o.follow(ctx, c, client.ObjectKeyFromObject(ds), token, before)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "Follow the sync to its end, with its progress.")
	cmd.Flags().DurationVar(&timeout, "timeout", 6*time.Hour, "How long --wait waits.")
	return cmd
}

// lastJob is the Job of the last recorded sync, or "".
func lastJob(ds *datav1alpha1.Dataset) string {
	if ds.Status.LastSync != nil {
		return ds.Status.LastSync.JobName
	}
	return ""
}

// follow polls the Dataset until the sync of token is recorded, drawing its progress on stderr.
func (o *options) follow(ctx context.Context, c client.Client, key client.ObjectKey, token, before string) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := ""
	for {
		var ds datav1alpha1.Dataset
		if err := c.Get(ctx, key, &ds); err != nil {
			return err
		}
		if ls := ds.Status.LastSync; ds.Status.LastManualSync == token && ls != nil && ls.JobName != before {
			if last != "" {
				fmt.Fprintln(o.streams.ErrOut)
			}
			return o.syncResult(&ds)
		}
		if line := progressLine(&ds); line != last {
			// Spaces over what a longer previous line left on screen.
			fmt.Fprint(o.streams.ErrOut, "\r"+line+strings.Repeat(" ", max(0, len(last)-len(line))))
			last = line
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(o.streams.ErrOut)
			return fmt.Errorf("dataset %s: the sync did not finish in time (%s): %w", key, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// syncResult prints a finished sync, and is an error when it failed.
func (o *options) syncResult(ds *datav1alpha1.Dataset) error {
	ls := ds.Status.LastSync
	if ls.Result == datav1alpha1.SyncSucceeded {
		fmt.Fprintf(o.streams.Out, "dataset %s/%s: synced in %s: %d copied (%s), %d deleted, %d unchanged\n", ds.Namespace, ds.Name,
			wire.Duration(time.Duration(ls.DurationMillis)*time.Millisecond), ls.FilesCopied, wire.Quantity(ls.BytesCopied), ls.FilesDeleted, ls.FilesUnchanged)
		return nil
	}
	return fmt.Errorf("dataset %s/%s: the sync failed: %s: %s (kubectl pqcache why %s)", ds.Namespace, ds.Name, ls.Reason, ls.Message, ds.Name)
}

// progressLine draws a running sync: a bar of its bytes, files and speed, or why it has not started.
func progressLine(ds *datav1alpha1.Dataset) string {
	p := ds.Status.Progress
	if p == nil || p.BytesTotal == 0 {
		if c := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionSyncing); c != nil {
			return fmt.Sprintf("waiting: %s: %s", c.Reason, c.Message)
		}
		return "waiting for the operator"
	}
	if p.Listing {
		// The totals still grow: a bar would fill and then jump back.
		return fmt.Sprintf("listing: %d/%d+ files  %s/%s+  %s/s", p.FilesDone, p.FilesTotal,
			wire.Quantity(p.BytesDone), wire.Quantity(p.BytesTotal), wire.Quantity(p.BytesPerSecond))
	}
	const width = 30
	done := int(float64(width) * float64(p.BytesDone) / float64(p.BytesTotal))
	bar := strings.Repeat("=", min(done, width)) + strings.Repeat(" ", width-min(done, width))
	return fmt.Sprintf("[%s] %d/%d files  %s/%s  %s/s  %s left", bar, p.FilesDone, p.FilesTotal,
		wire.Quantity(p.BytesDone), wire.Quantity(p.BytesTotal), wire.Quantity(p.BytesPerSecond), short(time.Duration(p.RemainingMillis)*time.Millisecond))
}
