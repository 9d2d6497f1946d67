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
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/docs"
)

// recentEvents is how many of the latest events why shows.
const recentEvents = 10

func (o *options) whyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "why (NAME | dataset/NAME)",
		Short: "Why a Dataset is (not) Ready: its conditions, its last and running Jobs and their pods, recent events, and what to do",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ds, err := o.dataset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			d, err := diagnose(cmd.Context(), c, ds)
			if err != nil {
				return err
			}
			if done, err := o.printObject(cmd.OutOrStdout(), d); done {
				return err
			}
			return d.print(cmd.OutOrStdout(), o.now())
		},
	}
}

// diagnosis is everything `why` shows about one Dataset.
type diagnosis struct {
	Dataset *datav1alpha1.Dataset `json:"dataset"`
	// Jobs are the Dataset's sync Jobs, newest first, with their pods.
	Jobs []jobDiagnosis `json:"jobs,omitempty"`
	// Events are the latest events about the Dataset and its Jobs, oldest first.
	Events []corev1.Event `json:"events,omitempty"`
	// Advice is the troubleshooting entry of each reason the Dataset's conditions give.
	Advice []docs.Trouble `json:"advice,omitempty"`
}

type jobDiagnosis struct {
	Job  batchv1.Job  `json:"job"`
	Pods []corev1.Pod `json:"pods,omitempty"`
}

// diagnose gathers what the API server knows of a Dataset's trouble.
func diagnose(ctx context.Context, c client.Client, ds *datav1alpha1.Dataset) (*diagnosis, error) {
	d := &diagnosis{Dataset: ds}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(ds.Namespace), client.MatchingLabels{"app.kubernetes.io/managed-by": "pqcache"}); err != nil {
		return nil, fmt.Errorf("listing the Dataset's Jobs: %w", err)
	}
	// The Dataset's own: those it controls (a label holds a long name shortened, an owner reference
	// the object itself).
	jobs.Items = slices.DeleteFunc(jobs.Items, func(j batchv1.Job) bool { return !metav1.IsControlledBy(&j, ds) })
	slices.SortFunc(jobs.Items, func(a, b batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	names := map[string]bool{ds.Name: true}
	for i, j := range jobs.Items {
		if i == 2 {
			break // the running one and the last finished one say enough
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ds.Namespace), client.MatchingLabels{"job-name": j.Name}); err != nil {
			return nil, fmt.Errorf("listing the pods of Job %s: %w", j.Name, err)
		}
		d.Jobs = append(d.Jobs, jobDiagnosis{Job: j, Pods: pods.Items})
		names[j.Name] = true
		for _, p := range pods.Items {
			names[p.Name] = true
		}
	}
	// The API server selects events by the object they are about, so a busy namespace's other events
	// never travel.
	for name := range names {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace(ds.Namespace), client.MatchingFields{"involvedObject.name": name}); err != nil {
			return nil, fmt.Errorf("listing the events of %s: %w", name, err)
		}
		d.Events = append(d.Events, events.Items...)
	}
	slices.SortFunc(d.Events, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	if len(d.Events) > recentEvents {
		d.Events = d.Events[len(d.Events)-recentEvents:]
	}
	seen := map[string]bool{}
	for _, c := range ds.Status.Conditions {
		if t, ok := docs.Troubleshooting(c.Reason); ok && !seen[c.Reason] && c.Reason != datav1alpha1.ReasonSynced {
			seen[c.Reason] = true
			d.Advice = append(d.Advice, t)
		}
	}
	return d, nil
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// print writes the diagnosis on one screen.
func (d *diagnosis) print(w io.Writer, now time.Time) error {
	ds := d.Dataset
	ready := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady)
	switch ready {
	case nil:
		fmt.Fprintf(w, "Dataset %s/%s has no Ready condition yet: is the operator running?\n", ds.Namespace, ds.Name)
	default:
		fmt.Fprintf(w, "Dataset %s/%s: Ready=%s (%s): %s\n", ds.Namespace, ds.Name, ready.Status, ready.Reason, ready.Message)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCONDITION\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range ds.Status.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, ago(now, c.LastTransitionTime.Time), oneLine(c.Message, 120))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if ls := ds.Status.LastSync; ls != nil {
		fmt.Fprintf(w, "\nLast sync: Job %s (%s), %s", ls.JobName, ls.Trigger, ls.Result)
		if ls.CompletionTime != nil {
			fmt.Fprintf(w, " %s", ago(now, ls.CompletionTime.Time))
		}
		if ls.Reason != "" {
			fmt.Fprintf(w, ": %s: %s", ls.Reason, oneLine(ls.Message, 200))
		}
		fmt.Fprintln(w)
	}
	for _, j := range d.Jobs {
		fmt.Fprintf(w, "Job %s: %s\n", j.Job.Name, jobState(&j.Job))
		for _, p := range j.Pods {
			fmt.Fprintf(w, "  pod %s: %s\n", p.Name, podState(&p))
		}
	}
	if len(d.Events) > 0 {
		fmt.Fprintln(w, "\nRecent events:")
		for _, e := range d.Events {
			fmt.Fprintf(w, "  %s  %-7s %s  %s/%s: %s\n", ago(now, eventTime(e)), e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, oneLine(e.Message, 160))
		}
	}
	for _, a := range d.Advice {
		fmt.Fprintf(w, "\n%s (%s): %s.\n  What to do: %s.\n  (docs/troubleshooting.md)\n", a.Reason, a.On, a.Meaning, strings.TrimSuffix(a.Fix, "."))
	}
	return nil
}

// jobState says where a Job stands, from its conditions.
func jobState(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			s := string(c.Type)
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			return s
		}
	}
	if j.Status.Active > 0 {
		return "running"
	}
	return "waiting for its pod"
}

// podState says what a pod's containers are doing, in the kubelet's words.
func podState(p *corev1.Pod) string {
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		switch {
		case s.State.Waiting != nil:
			return fmt.Sprintf("%s waiting: %s: %s", s.Name, s.State.Waiting.Reason, oneLine(s.State.Waiting.Message, 160))
		case s.State.Terminated != nil && s.State.Terminated.ExitCode != 0:
			return fmt.Sprintf("%s exited %d (%s)", s.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("not scheduled: %s: %s", c.Reason, oneLine(c.Message, 160))
		}
	}
	return string(p.Status.Phase)
}

// oneLine shortens a message to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
