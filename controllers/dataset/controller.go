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

package dataset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// Reconciler keeps a Dataset's volume in step with its S3 prefix: it owns the claim (unless the
// Dataset brings one), starts a worker Job that runs `pqcache sync` when a refresh is due, and turns
// the worker's report (its termination message) into status. It never reads S3 or the volume itself.
type Reconciler struct {
	client.Client
	// APIReader reads pods uncached: the controller reads a worker pod once, when its Job finishes, and
	// a cluster-wide pod informer would cost far more memory than those reads.
	APIReader client.Reader
	Clock     clock.PassiveClock
	Recorder  events.EventRecorder
	Worker    jobs.WorkerOptions
	// MaxConcurrentSyncs caps the sync Jobs running at once across the cluster; 0 means no cap.
	MaxConcurrentSyncs int
	// SweepInterval is how often the admission queue drops keys of Datasets that are gone (default 5m).
	SweepInterval time.Duration
	// Events runs the Datasets' event sources (spec.refresh.events); nil: none.
	Events EventHub
	// AgentPods finds the node agents, whose absence on a node makes its copies not ready (NoAgent);
	// nil: only a DatasetReplica no agent ever reported on says so.
	AgentPods *AgentPods
	// AgentAccount is the node agents' ServiceAccount, granted each Dataset's credentials Secret by
	// name (agent_grant.go); empty: no grants are made.
	AgentAccount types.NamespacedName

	admission *admission.Queue
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create

// datasetFacts is what one reconcile learned, from which the conditions follow (setDatasetConditions).
// The sync half fills it as it goes (syncRound); the replica half's part is copies, which it returns.
type datasetFacts struct {
	hash        string
	activeJob   *batchv1.Job
	queued      bool
	specError   string // a spec the controller cannot act on
	claimError  string // the claim is missing or unusable
	claimReason string // ClaimNotFound or ClaimFailed
	sizing      bool   // a Job is listing the source to size the claim
	// podProblem is what keeps the active Job's pod from running: the scheduler's or the kubelet's words.
	podProblem jobs.PodProblem
	// copies is what the replica half found of a Dataset with spec.replicas (replicaReconciler).
	copies *copiesFacts
}

// stepResult is what one half of the reconcile (reconcileSync or reconcileCopies) returns: the facts
// the conditions follow from, the news to tell once the status is written, and when to look again.
type stepResult struct {
	facts  datasetFacts
	news   news
	result ctrl.Result
}

// Reconcile runs the steps for one Dataset and writes its status once, at the end, if it changed;
// only then does it tell the news the steps returned.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ds datav1alpha1.Dataset
	if err := r.Get(ctx, req.NamespacedName, &ds); err != nil {
		if apierrors.IsNotFound(err) {
			r.admission.ForgetOwner(req.NamespacedName)
			forgetDataset(req.Namespace, req.Name)
			if r.Events != nil {
				r.Events.Forget(req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := ds.DeepCopy()
	hash := syncspec.SourceHash(&ds.Spec)

	reconcile := r.reconcileSync
	if ds.Spec.Replicas != nil {
		reconcile = r.reconcileCopies
	}
	// The agents' grant first: the seed's agent reads the Secret as soon as the copies step asks it to
	// sync.
	gerr := r.reconcileAgentGrant(ctx, &ds)
	step, err := reconcile(ctx, &ds, hash)
	err = errors.Join(err, gerr)
	ds.Status.ObservedGeneration = ds.Generation
	if m := ds.Status.Manifest; m != nil {
		m.Size = wire.Quantity(m.Bytes)
	}
	setDatasetConditions(&ds, step.facts)
	if r.Events != nil {
		st, problem := r.Events.Status(req.NamespacedName)
		setEventConditions(&ds, &st, problem)
	} else if ds.Spec.Refresh.Events != nil {
		setEventConditions(&ds, &datav1alpha1.EventStatus{}, &EventProblem{Reason: wire.ReasonUnavailable,
			Message: "this operator runs no event sources; the Dataset refreshes on its schedule"})
	}
	listing := step.facts.activeJob != nil && step.facts.activeJob.Annotations[AnnotationTrigger] != TriggerEvents
	observeDataset(&ds, meta.IsStatusConditionTrue(ds.Status.Conditions, datav1alpha1.ConditionReady), listing)

	changed := !equality.Semantic.DeepEqual(orig.Status, ds.Status)
	if written, res, werr := jobs.WriteStatus(ctx, r.Status(), orig, &ds, changed, "dataset", err); !written {
		return res, werr
	}
	step.news.tell(ctx, &ds, r.Events, r.Recorder)
	if len(step.news.batches) > 0 && r.Events != nil {
		// The batches settled only now, after status was written: their counters (status.events
		// applied, lag) reach status on a pass a second from now, not whenever the Dataset wakes next.
		return requeueWithin(step.result, time.Second), err
	}
	return step.result, err
}

// requeueWithin is res, asking for the next pass no later than d from now.
func requeueWithin(res ctrl.Result, d time.Duration) ctrl.Result {
	if res.RequeueAfter == 0 || res.RequeueAfter > d {
		res.RequeueAfter = d
	}
	return res
}

// reconcileCopies runs the replica half (replicaReconciler) for a Dataset with spec.replicas and
// applies the status it returns.
func (r *Reconciler) reconcileCopies(ctx context.Context, ds *datav1alpha1.Dataset, hash string) (stepResult, error) {
	now := r.Clock.Now()
	step := stepResult{facts: datasetFacts{hash: hash}}
	sched, err := parseSchedule(ds.Spec.Refresh.Schedule, now)
	if err != nil {
		step.facts.specError = fmt.Sprintf("refresh.schedule %q: %v", ds.Spec.Refresh.Schedule, err)
		return step, nil // nothing to retry until the spec changes
	}
	key := client.ObjectKeyFromObject(ds)
	if err := r.watchEvents(ctx, ds, key); err != nil {
		return step, err
	}
	copies := replicaReconciler{client: r.Client, apiReader: r.APIReader, agentPods: r.AgentPods, recorder: r.Recorder}
	out, err := copies.reconcile(ctx, replicaInput{ds: ds, hash: hash, sched: sched, pending: r.pendingBatch(ds, key), now: now})
	ds.Status = out.status
	step.facts.copies, step.news, step.result = out.copies, out.news, ctrl.Result{RequeueAfter: out.requeueAfter}
	return step, err
}

// syncRound is what the sync half learns in one reconcile: the facts the conditions follow from, and
// the news to tell once the status is written.
type syncRound struct {
	datasetFacts
	news news
}

// reconcileSync is the sync half, for a Dataset without spec.replicas: its claim and its sync Jobs.
func (r *Reconciler) reconcileSync(ctx context.Context, ds *datav1alpha1.Dataset, hash string) (stepResult, error) {
	round := &syncRound{datasetFacts: datasetFacts{hash: hash}}
	res, err := r.syncSteps(ctx, ds, round)
	return stepResult{facts: round.datasetFacts, news: round.news, result: res}, err
}

// syncSteps ensures the claim, records finished sync Jobs, and starts one when a refresh is due.
func (r *Reconciler) syncSteps(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound) (ctrl.Result, error) {
	now := r.Clock.Now()
	key := types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}
	sched, err := parseSchedule(ds.Spec.Refresh.Schedule, now)
	if err != nil {
		facts.specError = fmt.Sprintf("refresh.schedule %q: %v", ds.Spec.Refresh.Schedule, err)
		r.admission.ForgetOwner(key)
		return ctrl.Result{}, nil // nothing to retry until the spec changes
	}
	if err := r.watchEvents(ctx, ds, key); err != nil {
		return ctrl.Result{}, err
	}
	if res, ready, err := r.claimReady(ctx, ds, facts, key); !ready {
		return res, err
	}
	if err := r.recordFinished(ctx, ds, facts, key); err != nil {
		return ctrl.Result{}, err
	}
	if facts.activeJob != nil {
		return r.followActive(ctx, ds, facts)
	}
	ds.Status.Progress = nil

	batch := r.pendingBatch(ds, key)
	if batch != nil && facts.news.settles(batch.ID) {
		batch = nil // a Job recorded in this reconcile has just applied it
	}
	d := decideSync(ds, sched, facts.hash, now, batch)
	ds.Status.NextSyncTime = nil
	if d.NextScheduled != nil {
		ds.Status.NextSyncTime = &metav1.Time{Time: *d.NextScheduled}
	}
	if d.Trigger == "" || !ds.DeletionTimestamp.IsZero() {
		// Nothing due, or the Dataset is being deleted: a Job started now would outlive its purpose.
		r.admission.ForgetOwner(key)
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
	}
	// A new partition under spec.fresh goes first: its targeted sync takes no place in the queue.
	freshFirst := d.Trigger == TriggerEvents && batch.Fresh
	if !freshFirst && !r.admission.Admit(key, r.activeSyncs(ctx), now) {
		facts.queued = true
		// A finishing sync Job wakes the queue (see SetupWithManager); the requeue is a safety net.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	return r.startSync(ctx, ds, facts, d.Trigger, batch)
}

// claimReady ensures the claim; ready is false when the reconcile must end with (res, err) because
// the claim is missing, unusable, or still being sized.
func (r *Reconciler) claimReady(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound, key types.NamespacedName) (res ctrl.Result, ready bool, err error) {
	wait, err := r.ensureClaim(ctx, ds, facts)
	switch {
	case err != nil:
		r.admission.ForgetOwner(key)
		return ctrl.Result{}, false, err
	case facts.claimError != "":
		r.admission.ForgetOwner(key)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, false, nil // a claim created meanwhile also wakes us
	case facts.sizing:
		return ctrl.Result{RequeueAfter: wait}, false, nil // the sizing Job's updates wake us too
	}
	return ctrl.Result{}, true, nil
}

// recordFinished records the finished sync Job that is news, and notes the one still running in
// facts.activeJob.
func (r *Reconciler) recordFinished(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound, key types.NamespacedName) error {
	syncJobs, err := r.syncJobs(ctx, ds)
	if err != nil {
		return err
	}
	for i := range syncJobs {
		j := &syncJobs[i]
		js := jobs.StateOf(j)
		if !js.Finished {
			facts.activeJob = j
			r.admission.Running(key)
			continue
		}
		// Only the Job created after the last recorded one is news; any other is recorded already,
		// or superseded.
		if j.Annotations[AnnotationAfter] != lastRecordedJob(ds) {
			continue
		}
		if err := r.record(ctx, ds, j, js, facts); err != nil {
			return err
		}
	}
	return nil
}

// followActive copies the running sync's progress into status and says when to look again: the
// worker's progress lives on its pod, which does not wake us.
func (r *Reconciler) followActive(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound) (ctrl.Result, error) {
	running, since, err := r.readProgress(ctx, ds, facts.activeJob, facts)
	if err != nil {
		return ctrl.Result{}, err
	}
	if running && ds.Status.Progress == nil && r.Clock.Since(since) > quietAfter {
		// Its pod has run for a while and publishes no progress: only the Job's end is news, and that
		// wakes us. A pod that started moments ago may simply not have published yet.
		return ctrl.Result{RequeueAfter: quietPoll}, nil
	}
	return ctrl.Result{RequeueAfter: progressPoll}, nil
}

// pendingBatch is the event batch waiting for the Dataset, if it has an event source. A sync recorded
// in this reconcile may have just applied it: the caller checks its news.
func (r *Reconciler) pendingBatch(ds *datav1alpha1.Dataset, key types.NamespacedName) *EventBatch {
	if r.Events == nil || ds.Spec.Refresh.Events == nil {
		return nil
	}
	return r.Events.Pending(key)
}

// startSync creates the sync Job for trigger, with the event batch it applies, if any, and announces
// it once the status is written.
func (r *Reconciler) startSync(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound, trigger string, batch *EventBatch) (ctrl.Result, error) {
	pinned, err := r.pinnedGenerations(ctx, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	job := buildSyncJob(ds, r.Worker, trigger, facts.hash, pinned...)
	if err := controllerutil.SetControllerReference(ds, job, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if batch != nil && trigger != TriggerManual && trigger != TriggerSourceChanged {
		// The sync applies the batch (a listing covers it too); it is settled when the Job is recorded.
		job.Annotations[AnnotationEventBatch] = batch.ID
	}
	if trigger == TriggerEvents {
		if err := r.createChanges(ctx, ds, job, batch); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.ensureWorkerAccount(ctx, ds); err != nil {
		return ctrl.Result{}, err
	}
	facts.activeJob = job
	if err := r.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created by a reconcile whose view the cache has not caught up with: the round's name is
			// the same, so this is that Job, and it was announced then.
			return ctrl.Result{RequeueAfter: progressPoll}, nil
		}
		r.admission.ForgetOwner(client.ObjectKeyFromObject(ds))
		return ctrl.Result{}, fmt.Errorf("creating sync %s: %w", jobs.Describe(job), err)
	}
	facts.news.log("Started sync", "job", job.Name, "trigger", trigger)
	facts.news.event(job, corev1.EventTypeNormal, datav1alpha1.EventSyncStarted, "Sync", "Started %s (trigger: %s)", job.Name, trigger)
	return ctrl.Result{RequeueAfter: progressPoll}, nil
}

// watchEvents keeps the Dataset's event source running as its spec says (or stopped).
func (r *Reconciler) watchEvents(ctx context.Context, ds *datav1alpha1.Dataset, key types.NamespacedName) error {
	if r.Events == nil {
		return nil
	}
	if ds.Spec.Refresh.Events == nil || !ds.DeletionTimestamp.IsZero() {
		r.Events.Forget(key)
		return nil
	}
	if err := r.Events.Watch(ctx, ds); err != nil {
		return fmt.Errorf("watching the event source: %w", err)
	}
	return nil
}

// pinnedGenerations are the generations unfinished BenchRuns read, for the sync to keep: their pods
// mount the volume read-only and cannot hold a generation themselves, so the sync must not delete them.
func (r *Reconciler) pinnedGenerations(ctx context.Context, ds *datav1alpha1.Dataset) ([]int64, error) {
	var runs datav1alpha1.BenchRunList
	if err := r.List(ctx, &runs, client.InNamespace(ds.Namespace)); err != nil {
		return nil, fmt.Errorf("listing benchruns: %w", err)
	}
	var pinned []int64
	for _, run := range runs.Items {
		g := run.Status.DatasetGeneration
		if run.Spec.DatasetRef.Name != ds.Name || g == 0 || run.Status.CompletionTime != nil || slices.Contains(pinned, g) {
			continue
		}
		pinned = append(pinned, g)
	}
	return pinned, nil
}

// createChanges writes a targeted sync's change set into the ConfigMap its Job mounts, owned by the
// Dataset (deleted when the Job is recorded, or with the Dataset).
func (r *Reconciler) createChanges(ctx context.Context, ds *datav1alpha1.Dataset, job *batchv1.Job, b *EventBatch) error {
	cm, err := changesConfigMap(ds, job.Name, b)
	if err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(ds, cm, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating change set %s: %w", cm.Name, err)
	}
	return nil
}

// syncJobs lists the Dataset's sync Jobs, oldest first.
func (r *Reconciler) syncJobs(ctx context.Context, ds *datav1alpha1.Dataset) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{jobs.LabelDataset: datav1alpha1.LabelValue(ds.Name), jobs.LabelComponent: jobs.ComponentSync}); err != nil {
		return nil, fmt.Errorf("listing sync jobs: %w", err)
	}
	var owned []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, ds) {
			owned = append(owned, j)
		}
	}
	sort.Slice(owned, func(i, k int) bool { return owned[i].CreationTimestamp.Before(&owned[k].CreationTimestamp) })
	return owned, nil
}

// activeSyncs counts running sync Jobs across the cluster, for the concurrency cap.
func (r *Reconciler) activeSyncs(ctx context.Context) int {
	if r.MaxConcurrentSyncs <= 0 {
		return 0
	}
	return jobs.CountActive(ctx, r.Client, jobs.ComponentSync, r.MaxConcurrentSyncs)
}

// record reads a finished Job's report from its pod and writes it into status.
func (r *Reconciler) record(ctx context.Context, ds *datav1alpha1.Dataset, j *batchv1.Job, js jobs.State, facts *syncRound) error {
	pods, err := jobs.ListJobPods(ctx, r.APIReader, j)
	if err != nil {
		return err
	}
	wo := outcomeFromPods(pods)
	prevListing := ds.Status.LastListingSyncTime
	ok, summary := recordSync(ds, j, js, wo)
	if ok && r.Events != nil && ds.Spec.Refresh.Events != nil {
		r.noteUnannounced(ds, j, prevListing, facts)
	}
	if id := j.Annotations[AnnotationEventBatch]; id != "" && r.Events != nil {
		var outcome *wire.ChangeOutcome
		if wo.Report != nil {
			outcome = wo.Report.Changes
		}
		facts.news.batches = append(facts.news.batches, batchNews{id: id, ok: ok, outcome: outcome})
	}
	if j.Annotations[AnnotationTrigger] == TriggerEvents {
		// The change set served its Job.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name}}
		if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("deleting change set %s: %w", j.Name, err)
		}
	}
	// The metrics read the lastSync just recorded; another Job recorded in this reconcile replaces it.
	n := &facts.news
	n.syncs = append(n.syncs, syncNews{lastSync: *ds.Status.LastSync.DeepCopy(), ok: ok})
	if ok {
		n.log("Sync succeeded", "job", j.Name, "summary", summary)
		n.event(j, corev1.EventTypeNormal, datav1alpha1.EventSyncSucceeded, "Sync", "%s", summary)
		if ls := ds.Status.LastSync; ls.FilesUnverified > 0 {
			n.event(j, corev1.EventTypeWarning, datav1alpha1.EventFilesUnverified, "Sync", "%d files checked by size only: %s", ls.FilesUnverified, ls.Warning)
		}
		return nil
	}
	failedAttempts := ds.Status.FailedAttempts
	n.log("Sync failed", "job", j.Name, "summary", summary, "failedAttempts", failedAttempts)
	n.event(j, corev1.EventTypeNormal, datav1alpha1.EventSyncFailed, "Sync", "Attempt %d failed: %s", failedAttempts, summary)
	if failedAttempts == failingWarningAfter {
		n.event(j, corev1.EventTypeWarning, datav1alpha1.EventSyncFailing, "Sync", "%d syncs in a row failed; last: %s", failedAttempts, summary)
	}
	return nil
}

// noteUnannounced counts the changes a listing sync just recorded found that no notification had
// announced, and says so: a Warning once it happens twice in a row.
func (r *Reconciler) noteUnannounced(ds *datav1alpha1.Dataset, j *batchv1.Job, prevListing *metav1.Time, facts *syncRound) {
	evs, _ := r.Events.Status(client.ObjectKeyFromObject(ds))
	found, repeated := noteUnannounced(&ds.Status, prevListing, evs.Pending)
	if found == 0 {
		return
	}
	n := &facts.news
	n.foundByListing += found
	n.log("A listing sync found changes no event notification announced", "job", j.Name, "changes", found, "repeated", repeated)
	typ, note := corev1.EventTypeNormal, "The %s listing sync found %d changes that no event notification announced; it applied them"
	if repeated {
		typ, note = corev1.EventTypeWarning, "The %s listing sync found %d changes that no event notification announced, as the one before it did: "+
			"the store or the way to the operator loses notifications, and only the schedule repairs them"
	}
	n.event(j, typ, datav1alpha1.EventChangesFoundByListing, "Sync", note, ds.Status.LastSync.Trigger, found)
}

// progressPoll is how often a running sync's progress is copied into status, and how soon a pod that
// has not started is looked at again (what the scheduler and kubelet say is not a Job event).
const progressPoll = 10 * time.Second

// quietPoll is how often the pod of a sync that runs without publishing progress is looked at: a
// safety net, since a pod list per running sync every 10 s is load on a large cluster's API server.
const quietPoll = time.Minute

// quietAfter is how long a running worker may take to publish its first progress (it publishes every
// 5 s) before the Dataset polls it only once a minute.
const quietAfter = 20 * time.Second

// readProgress copies the progress the worker published on its pod into status, notes what keeps the
// pod from running, if anything, and reports whether it runs.
func (r *Reconciler) readProgress(ctx context.Context, ds *datav1alpha1.Dataset, j *batchv1.Job, facts *syncRound) (running bool, since time.Time, err error) {
	pods, err := jobs.ListJobPods(ctx, r.APIReader, j)
	if err != nil {
		return false, since, err
	}
	state, problem, err := jobs.JobPodProblem(ctx, r.APIReader, j, pods, r.Clock.Now())
	if err != nil {
		return false, since, err
	}
	if state == jobs.PodStuck {
		facts.podProblem = problem
	}
	if p := progressFromPods(pods); p != nil {
		ds.Status.Progress = p
	}
	for _, p := range pods {
		if t := p.Status.StartTime; t != nil && t.After(since) {
			since = t.Time // the newest pod's start: a retried pod starts its progress again
		}
	}
	return state == jobs.PodRunning, since, nil
}

// failingWarningAfter is the number of consecutive failures after which a Warning is sent: one failure
// retried with backoff is routine; three in a row need a person.
const failingWarningAfter = 3

// SetupWithManager registers the reconciler with mgr; it watches the Jobs, claims and DatasetReplicas
// it owns, and the nodes that may keep copies.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.admission = admission.NewQueue(r.MaxConcurrentSyncs)
	sweep := admission.NewSweeper(r.admission, r.SweepInterval, func() client.Object { return &datav1alpha1.Dataset{} })
	if err := sweep.Add(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.Dataset{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&datav1alpha1.DatasetReplica{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		// A node that comes, goes or changes readiness may change any Dataset's copies; its kubelet's
		// heartbeats, every few seconds on every node, do not.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(datasetsWithReplicas(r.Client)), builder.WithPredicates(nodePlacementChanged)).
		// When any sync Job finishes or goes, a slot frees up: wake the Datasets queued for one.
		Watches(&batchv1.Job{}, admission.SlotFreed(r.admission, jobs.ComponentSync)).
		WatchesRawSource(sweep.Source())
	if r.Events != nil {
		// A batch of changed keys, or news about a Dataset's event source.
		b = b.WatchesRawSource(r.Events.Source())
	}
	return b.Named("dataset").
		// Datasets are independent; a few workers keep a burst of applies from queueing behind each other.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}
