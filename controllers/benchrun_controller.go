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

package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/bench/queries"
)

// BenchRunReconciler runs a BenchRun: when its Dataset is Ready, one Job per configuration × input runs
// `pqcache bench`; their summaries (termination messages) become status, and a Succeeded condition
// ends the run. A BenchRun is one-shot: its spec cannot change, and a finished run is left as it is.
type BenchRunReconciler struct {
	client.Client
	APIReader client.Reader
	Clock     clock.PassiveClock
	Worker    WorkerOptions
	// MaxConcurrentJobs caps bench Jobs running at once across the cluster (0: no cap); the Jobs
	// waiting longest start first, so one big run cannot starve the others, and measurements do not
	// fight over nodes more than the cap allows.
	MaxConcurrentJobs int

	admission *admission
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns/status,verbs=get;update;patch

// Reconcile advances one BenchRun and writes its status once, if it changed.
func (r *BenchRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var run datav1alpha1.BenchRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := run.DeepCopy()
	result, err := r.reconcileRun(ctx, &run)
	run.Status.ObservedGeneration = run.Generation
	if !equality.Semantic.DeepEqual(orig.Status, run.Status) {
		if perr := r.Status().Patch(ctx, &run, client.MergeFrom(orig)); perr != nil {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("updating status of benchrun %s: %w", klog.KObj(&run), perr))
		}
	}
	return result, err
}

func (r *BenchRunReconciler) set(run *datav1alpha1.BenchRun, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: run.Generation})
}

// finish ends the run with reason: Succeeded True for Completed, else False and Stalled (kstatus
// Failed). Reconciling goes.
func (r *BenchRunReconciler) finish(run *datav1alpha1.BenchRun, reason, msg string, now time.Time) {
	status := metav1.ConditionFalse
	if reason == datav1alpha1.ReasonCompleted {
		status = metav1.ConditionTrue
		meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionStalled)
	} else {
		r.set(run, datav1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	}
	r.set(run, datav1alpha1.ConditionSucceeded, status, reason, msg)
	meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionReconciling)
	if run.Status.CompletionTime == nil {
		run.Status.CompletionTime = &metav1.Time{Time: now}
	}
	if run.Status.StartTime != nil {
		run.Status.DurationMillis = run.Status.CompletionTime.Sub(run.Status.StartTime.Time).Milliseconds()
	}
}

func (r *BenchRunReconciler) waiting(run *datav1alpha1.BenchRun, reason, msg string) {
	r.set(run, datav1alpha1.ConditionSucceeded, metav1.ConditionUnknown, reason, msg)
	r.set(run, datav1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
}

func (r *BenchRunReconciler) reconcileRun(ctx context.Context, run *datav1alpha1.BenchRun) (ctrl.Result, error) {
	if c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded); c != nil && c.Status != metav1.ConditionUnknown {
		return ctrl.Result{}, nil // finished: a BenchRun records one run
	}
	now := r.Clock.Now()
	planned := plannedJobs(run)
	run.Status.Queries = int32(len(run.Spec.Queries))
	if run.Status.Queries == 0 {
		run.Status.Queries = queries.Count
	}

	// Wait for the Dataset, before the first Job only.
	var ds datav1alpha1.Dataset
	if err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.DatasetRef.Name}, &ds); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if run.Status.StartTime == nil {
			r.waiting(run, datav1alpha1.ReasonWaitingForDataset, fmt.Sprintf("Dataset %q does not exist", run.Spec.DatasetRef.Name))
			return ctrl.Result{}, nil // the Dataset's creation wakes us
		}
	}
	if run.Status.StartTime == nil {
		if why := unsupportedWith(run, &ds); why != "" {
			r.finish(run, datav1alpha1.ReasonUnsupported, why, now)
			return ctrl.Result{}, nil
		}
		if !meta.IsStatusConditionTrue(ds.Status.Conditions, datav1alpha1.ConditionReady) {
			r.waiting(run, datav1alpha1.ReasonWaitingForDataset, fmt.Sprintf("Waiting for Dataset %q to be Ready", ds.Name))
			return ctrl.Result{}, nil // the Dataset's status changes wake us
		}
		run.Status.StartTime = &metav1.Time{Time: now}
		if ds.Status.Manifest != nil {
			run.Status.DatasetDigest = ds.Status.Manifest.Digest
		}
	}

	deadline := run.Status.StartTime.Add(parseDuration(run.Spec.Timeout, 6*time.Hour))
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{LabelBenchRun: run.Name, LabelComponent: componentBench}); err != nil {
		return ctrl.Result{}, err
	}
	existing := map[string]*batchv1.Job{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], run) {
			existing[list.Items[i].Name] = &list.Items[i]
		}
	}
	counts := &datav1alpha1.JobCounts{Total: int32(len(planned))}
	var results []datav1alpha1.BenchResult
	timedOut := false
	// unschedulable says which running Jobs' pods fit no node; starting, that some pod is not running
	// yet (the scheduler's verdict is not a Job event, so the run looks again sooner).
	var unschedulable []string
	starting := false
	for _, pj := range planned {
		name := benchJobName(run, pj)
		j, ok := existing[name]
		// Admission keys name the run and the Job ("run/job": names cannot hold '/'), so a finished Job
		// can wake the runs queued for a slot without looking them up.
		key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name + "/" + name}
		if !ok {
			if ds.Name == "" {
				return ctrl.Result{}, fmt.Errorf("dataset %q is gone", run.Spec.DatasetRef.Name)
			}
			if r.MaxConcurrentJobs > 0 && !r.admission.Admit(key, activeJobs(ctx, r.Client, componentBench, r.MaxConcurrentJobs), now) {
				counts.Queued++
				continue
			}
			job := buildBenchJob(run, &ds, pj, r.Worker, deadline.Sub(now))
			if err := controllerutil.SetControllerReference(run, job, r.Scheme()); err != nil {
				return ctrl.Result{}, err
			}
			if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, fmt.Errorf("creating bench %s: %w", describeJob(job), err)
			}
			counts.Active++
			continue
		}
		r.admission.Running(key)
		js := jobStateOf(j)
		if !js.Finished {
			counts.Active++
			pods, err := listJobPods(ctx, r.APIReader, j)
			if err != nil {
				return ctrl.Result{}, err
			}
			state, why := schedulingOf(pods)
			switch state {
			case podUnschedulable:
				unschedulable = append(unschedulable, fmt.Sprintf("%s/%s: %s", pj.config.Name, pj.input.Type, why))
			case podNotStarted:
				starting = true
			}
			continue
		}
		if js.Failed {
			counts.Failed++
			timedOut = timedOut || js.Reason == batchv1.JobReasonDeadlineExceeded
		} else {
			counts.Succeeded++
		}
		pods, err := listJobPods(ctx, r.APIReader, j)
		if err != nil {
			return ctrl.Result{}, err
		}
		res := benchResultFrom(j, js, pods)
		var readBytes int64
		if pj.input.Type == datav1alpha1.InputS3 && ds.Status.Manifest != nil {
			readBytes = ds.Status.Manifest.Bytes
		}
		res.CostMicros = costMicros(run.Spec.Pricing, pj.config, res, readBytes)
		results = append(results, res)
	}
	sort.Slice(results, func(i, k int) bool {
		return results[i].Config+"/"+results[i].Input < results[k].Config+"/"+results[k].Input
	})
	run.Status.Results = results
	if ds.Status.Manifest != nil {
		run.Status.BreakEvenRuns = breakEvenRuns(run.Spec.Pricing, results, ds.Status.Manifest.Bytes)
	}
	run.Status.Jobs = counts
	run.Status.Progress = fmt.Sprintf("%d/%d jobs", counts.Succeeded+counts.Failed, counts.Total)
	run.Status.DurationMillis = now.Sub(run.Status.StartTime.Time).Milliseconds()
	if counts.Active+counts.Queued > 0 {
		msg := fmt.Sprintf("%d of %d Jobs running", counts.Active, counts.Total)
		if counts.Queued > 0 {
			msg += fmt.Sprintf(", %d waiting for a slot under the operator's cap on bench Jobs", counts.Queued)
		}
		reason := datav1alpha1.ReasonRunning
		if len(unschedulable) > 0 {
			reason = datav1alpha1.ReasonUnschedulable
			msg = fmt.Sprintf("%d of %d Jobs cannot be scheduled and wait for a node with room until spec.timeout (%s)",
				len(unschedulable), counts.Total, strings.Join(limit(unschedulable, 4), "; "))
		}
		r.waiting(run, reason, msg)
		next := time.Minute
		if starting || len(unschedulable) > 0 {
			next = 10 * time.Second
		}
		return ctrl.Result{RequeueAfter: max(time.Second, min(deadline.Sub(now), next))}, nil
	}
	limits := map[string]string{}
	for _, c := range run.Spec.Configs {
		limits[c.Name] = c.Memory.String()
	}
	reason, msg := runOutcome(results, timedOut, limits)
	r.finish(run, reason, msg, now)
	ctrl.LoggerFrom(ctx).Info("Bench run finished", "benchrun", klog.KObj(run), "reason", reason)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler; it watches its Jobs and the Datasets runs wait for.
func (r *BenchRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.admission = newAdmission(r.MaxConcurrentJobs)
	return ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.BenchRun{}).
		Owns(&batchv1.Job{}).
		Watches(&datav1alpha1.Dataset{}, handler.EnqueueRequestsFromMapFunc(r.runsOfDataset)).
		// When any bench Job finishes, a slot frees up: wake the runs with Jobs queued for one.
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(r.wakeQueued)).
		Named("benchrun").
		Complete(r)
}

func (r *BenchRunReconciler) wakeQueued(_ context.Context, obj client.Object) []reconcile.Request {
	j, ok := obj.(*batchv1.Job)
	if !ok || j.Labels[LabelComponent] != componentBench || !jobStateOf(j).Finished {
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	for _, k := range r.admission.Waiting() {
		runName, _, _ := strings.Cut(k.Name, "/")
		rk := types.NamespacedName{Namespace: k.Namespace, Name: runName}
		if !seen[rk] {
			seen[rk] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: rk})
		}
	}
	return reqs
}

// runsOfDataset wakes the unfinished runs that read a Dataset when it changes.
func (r *BenchRunReconciler) runsOfDataset(ctx context.Context, obj client.Object) []reconcile.Request {
	var runs datav1alpha1.BenchRunList
	if err := r.List(ctx, &runs, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, run := range runs.Items {
		if run.Spec.DatasetRef.Name == obj.GetName() && run.Status.CompletionTime == nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&run)})
		}
	}
	return reqs
}
