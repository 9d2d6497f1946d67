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
	"slices"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// DatasetReconciler keeps a Dataset's volume in step with its S3 prefix: it owns the claim (unless the
// Dataset brings one), starts a worker Job that runs `pqcache sync` when a refresh is due, and turns
// the worker's report (its termination message) into status. It never reads S3 or the volume itself.
type DatasetReconciler struct {
	client.Client
	// APIReader reads pods uncached: the controller reads a worker pod once, when its Job finishes, and
	// a cluster-wide pod informer would cost far more memory than those reads.
	APIReader client.Reader
	Clock     clock.PassiveClock
	Recorder  events.EventRecorder
	Worker    WorkerOptions
	// MaxConcurrentSyncs caps the sync Jobs running at once across the cluster; 0 means no cap.
	MaxConcurrentSyncs int
	// SweepInterval is how often the admission queue drops keys of Datasets that are gone (default 5m).
	SweepInterval time.Duration
	// Events runs the Datasets' event sources (spec.refresh.events); nil: none.
	Events EventHub

	admission *admission
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create

// datasetFacts is what one reconcile learned, from which the conditions follow.
type datasetFacts struct {
	hash        string
	activeJob   *batchv1.Job
	queued      bool
	specError   string // a spec the controller cannot act on
	claimError  string // the claim is missing or unusable
	claimReason string // ClaimNotFound or ClaimFailed
	sizing      bool   // a Job is listing the source to size the claim
	// podProblem is what keeps the active Job's pod from running: the scheduler's or the kubelet's words.
	podProblem podProblem
	// settledBatch is the event batch a Job recorded in this reconcile applied: settled once the status
	// is written, it must not start another sync meanwhile.
	settledBatch string
	// announce holds what to log, count and send as events about recorded Jobs: done only once the
	// status that records them is written, so a reconcile from a stale cache, whose write is refused,
	// never counts a Job twice.
	announce []func()
}

// Reconcile runs the steps for one Dataset and writes its status once, at the end, if it changed.
func (r *DatasetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	facts := datasetFacts{hash: sourceHash(&ds.Spec)}

	result, err := r.reconcileSync(ctx, &ds, &facts)
	ds.Status.ObservedGeneration = ds.Generation
	if m := ds.Status.Manifest; m != nil {
		m.Size = humanBytes(m.Bytes)
	}
	setDatasetConditions(&ds, facts)
	if r.Events != nil {
		st, problem := r.Events.Status(req.NamespacedName)
		setEventConditions(&ds, &st, problem)
	} else if ds.Spec.Refresh.Events != nil {
		setEventConditions(&ds, &datav1alpha1.EventStatus{}, &EventProblem{Reason: datav1alpha1.ReasonUnavailable,
			Message: "this operator runs no event sources; the Dataset refreshes on its schedule"})
	}
	observeDataset(&ds, meta.IsStatusConditionTrue(ds.Status.Conditions, datav1alpha1.ConditionReady))

	if !equality.Semantic.DeepEqual(orig.Status, ds.Status) {
		// The patch carries the resourceVersion read: a reconcile that started from a stale cache
		// (before another recorded the same Job) is refused instead of recording it again.
		patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
		if perr := r.Status().Patch(ctx, &ds, patch); perr != nil {
			if apierrors.IsConflict(perr) && err == nil {
				ctrl.LoggerFrom(ctx).V(1).Info("Status changed meanwhile; reconciling again from the newer copy")
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("updating status of dataset %s: %w", klog.KObj(&ds), perr))
		}
	}
	for _, announce := range facts.announce {
		announce()
	}
	return result, err
}

// reconcileSync ensures the claim, records finished sync Jobs, and starts one when a refresh is due.
func (r *DatasetReconciler) reconcileSync(ctx context.Context, ds *datav1alpha1.Dataset, facts *datasetFacts) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
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
	wait, err := r.ensureClaim(ctx, ds, facts)
	switch {
	case err != nil:
		r.admission.ForgetOwner(key)
		return ctrl.Result{}, err
	case facts.claimError != "":
		r.admission.ForgetOwner(key)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil // a claim created meanwhile also wakes us
	case facts.sizing:
		return ctrl.Result{RequeueAfter: wait}, nil // the sizing Job's updates wake us too
	}

	jobs, err := r.syncJobs(ctx, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	for i := range jobs {
		j := &jobs[i]
		js := jobStateOf(j)
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
			return ctrl.Result{}, err
		}
	}
	if facts.activeJob != nil {
		// The worker's progress lives on its pod, which does not wake us: look again shortly.
		running, err := r.readProgress(ctx, ds, facts.activeJob, facts)
		if err != nil {
			return ctrl.Result{}, err
		}
		if running && ds.Status.Progress == nil {
			// Its pod runs and publishes no progress: only the Job's end is news, and that wakes us.
			return ctrl.Result{RequeueAfter: quietPoll}, nil
		}
		return ctrl.Result{RequeueAfter: progressPoll}, nil
	}
	ds.Status.Progress = nil

	var batch *EventBatch
	if r.Events != nil && ds.Spec.Refresh.Events != nil {
		batch = r.Events.Pending(key)
		if batch != nil && batch.ID == facts.settledBatch {
			batch = nil
		}
	}
	d := decideSync(ds, sched, facts.hash, now, batch)
	if d.NextScheduled != nil {
		ds.Status.NextSyncTime = &metav1.Time{Time: *d.NextScheduled}
	} else {
		ds.Status.NextSyncTime = nil
	}
	result := ctrl.Result{RequeueAfter: d.RequeueAfter}
	if d.Trigger == "" || !ds.DeletionTimestamp.IsZero() {
		// Nothing due, or the Dataset is being deleted: a Job started now would outlive its purpose.
		r.admission.ForgetOwner(key)
		return result, nil
	}
	// A new partition under spec.fresh goes first: its targeted sync takes no place in the queue.
	freshFirst := d.Trigger == TriggerEvents && batch.Fresh
	if !freshFirst && !r.admission.Admit(key, r.activeSyncs(ctx), now) {
		facts.queued = true
		// A finishing sync Job wakes the queue (see SetupWithManager); the requeue is a safety net.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	job := buildSyncJob(ds, r.Worker, d.Trigger, facts.hash)
	if err := controllerutil.SetControllerReference(ds, job, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if batch != nil && d.Trigger != TriggerManual && d.Trigger != TriggerSourceChanged {
		// The sync applies the batch (a listing covers it too); it is settled when the Job is recorded.
		job.Annotations[AnnotationEventBatch] = batch.ID
	}
	if d.Trigger == TriggerEvents {
		if err := r.createChanges(ctx, ds, job, batch); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.keepPinnedGenerations(ctx, ds, job); err != nil {
		return ctrl.Result{}, err
	}
	facts.activeJob = job
	if err := r.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created by a reconcile whose view the cache has not caught up with: the round's name is
			// the same, so this is that Job, and it was announced then.
			return ctrl.Result{RequeueAfter: progressPoll}, nil
		}
		r.admission.ForgetOwner(key)
		return ctrl.Result{}, fmt.Errorf("creating sync %s: %w", describeJob(job), err)
	}
	trigger := d.Trigger
	facts.announce = append(facts.announce, func() {
		log.Info("Started sync", "dataset", klog.KObj(ds), "job", job.Name, "trigger", trigger)
		r.event(ds, job, corev1.EventTypeNormal, datav1alpha1.EventSyncStarted, "Sync", "Started %s (trigger: %s)", job.Name, trigger)
	})
	return ctrl.Result{RequeueAfter: progressPoll}, nil
}

// watchEvents keeps the Dataset's event source running as its spec says (or stopped).
func (r *DatasetReconciler) watchEvents(ctx context.Context, ds *datav1alpha1.Dataset, key types.NamespacedName) error {
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

// keepPinnedGenerations tells the sync which generations unfinished BenchRuns read: their pods mount
// the volume read-only and cannot hold a generation themselves, so the sync must not delete them.
func (r *DatasetReconciler) keepPinnedGenerations(ctx context.Context, ds *datav1alpha1.Dataset, job *batchv1.Job) error {
	var runs datav1alpha1.BenchRunList
	if err := r.List(ctx, &runs, client.InNamespace(ds.Namespace)); err != nil {
		return fmt.Errorf("listing benchruns: %w", err)
	}
	c := &job.Spec.Template.Spec.Containers[0]
	seen := map[int64]bool{}
	for _, run := range runs.Items {
		g := run.Status.DatasetGeneration
		if run.Spec.DatasetRef.Name != ds.Name || g == 0 || run.Status.CompletionTime != nil || seen[g] {
			continue
		}
		seen[g] = true
		c.Args = append(c.Args, "--keep-generation", strconv.FormatInt(g, 10))
	}
	return nil
}

// createChanges writes a targeted sync's change set into the ConfigMap its Job mounts, owned by the
// Dataset (deleted when the Job is recorded, or with the Dataset), and points the Job at it.
func (r *DatasetReconciler) createChanges(ctx context.Context, ds *datav1alpha1.Dataset, job *batchv1.Job, b *EventBatch) error {
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
	withChanges(&job.Spec.Template.Spec, cm.Name)
	return nil
}

// ensureClaim creates the Dataset's claim, or checks that its existing claim is there, and makes the
// claim this Dataset's alone: a claim holds one Dataset's cache (the annotations name it), because
// two Datasets syncing into one volume would prune each other's files. A claim whose size the spec
// omits is sized from a listing first; until that is done, facts.sizing is set and the returned
// duration says when to look again.
func (r *DatasetReconciler) ensureClaim(ctx context.Context, ds *datav1alpha1.Dataset, facts *datasetFacts) (time.Duration, error) {
	name := claimName(ds)
	ds.Status.ClaimName = name
	var existing corev1.PersistentVolumeClaim
	err := r.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: name}, &existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("reading claim %s: %w", name, err)
	}
	found := err == nil
	if found {
		holder, err := r.claimHolder(ctx, ds, &existing)
		if err != nil {
			return 0, err
		}
		if holder != "" {
			facts.claimError, facts.claimReason = fmt.Sprintf("claim %s already holds the cache of %s, and two Datasets syncing into one volume would prune each other's files: give Dataset %s a claim of its own", name, holder, ds.Name), datav1alpha1.ReasonClaimInUse
			return 0, nil
		}
	}
	if ds.Spec.Volume.ExistingClaim != "" {
		if !found {
			facts.claimError, facts.claimReason = fmt.Sprintf("volume.existingClaim %q does not exist in namespace %s", name, ds.Namespace), datav1alpha1.ReasonClaimNotFound
			return 0, nil
		}
		if err := r.markClaim(ctx, ds, &existing); apierrors.IsConflict(err) {
			return 0, err // changed meanwhile: look again
		} else if err != nil {
			facts.claimError, facts.claimReason = fmt.Sprintf("claim %s: %v", name, err), datav1alpha1.ReasonClaimFailed
			return 0, nil
		}
		if q, ok := existing.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			ds.Status.CapacityBytes = q.Value()
		}
		return 0, nil
	}
	var capacity resource.Quantity
	switch {
	case ds.Spec.Volume.Capacity != nil:
		capacity = *ds.Spec.Volume.Capacity
	case found:
		capacity = existing.Spec.Resources.Requests[corev1.ResourceStorage]
	default:
		q, wait, err := r.sizeFromListing(ctx, ds, facts)
		if err != nil || facts.sizing {
			return wait, err
		}
		capacity = q
	}
	if !found && !ds.DeletionTimestamp.IsZero() {
		return 0, nil // never create a claim for a Dataset being deleted: the garbage collector would chase it
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ds.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, pvc, func() error {
		if pvc.CreationTimestamp.IsZero() {
			pvc.Labels = map[string]string{labelName: "pqcache", labelManagedBy: "pqcache", LabelDataset: labelValue(ds.Name)}
			pvc.Spec.AccessModes = ds.Spec.Volume.AccessModes
			if len(pvc.Spec.AccessModes) == 0 {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
			}
			pvc.Spec.StorageClassName = ds.Spec.Volume.StorageClassName
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: capacity}
		} else if ptr.Deref(ds.Spec.Volume.AllowExpansion, false) {
			// Only growth is possible, and only where the StorageClass allows expansion (the API
			// server refuses it otherwise, and the error lands in the condition): to a larger
			// spec.volume.capacity, or to what a sync refused for lack of room needs.
			want := maxQuantity(capacity, neededCapacity(ds, pvc))
			if cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; want.Cmp(cur) > 0 {
				pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
				ds.Status.CapacityNote = fmt.Sprintf("grown from %s to %s (volume.allowExpansion)", cur.String(), want.String())
			}
		}
		setHolder(pvc, ds)
		if ds.Spec.Volume.Reclaim == datav1alpha1.ReclaimRetain {
			// No owner: the claim outlives the Dataset. A claim that was Delete until now loses the
			// reference, or the garbage collector would delete the data the user asked to keep.
			pvc.OwnerReferences = slices.DeleteFunc(pvc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ds.UID })
			return nil
		}
		return controllerutil.SetControllerReference(ds, pvc, r.Scheme())
	})
	if err != nil {
		facts.claimError, facts.claimReason = fmt.Sprintf("claim %s: %v", name, err), datav1alpha1.ReasonClaimFailed
		return 0, nil
	}
	if op == controllerutil.OperationResultCreated {
		facts.announce = append(facts.announce, func() {
			r.event(ds, pvc, corev1.EventTypeNormal, datav1alpha1.EventClaimCreated, "CreateClaim", "Created claim %s of %s", name, capacity.String())
		})
	}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		ds.Status.CapacityBytes = q.Value()
	}
	return 0, nil
}

// Annotations on a claim naming the Dataset whose cache it holds.
const (
	AnnotationDataset    = "data.pqcache.dev/dataset-name"
	annotationDatasetUID = "data.pqcache.dev/dataset-uid"
)

func setHolder(pvc *corev1.PersistentVolumeClaim, ds *datav1alpha1.Dataset) {
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[AnnotationDataset] = ds.Name
	pvc.Annotations[annotationDatasetUID] = string(ds.UID)
}

// claimHolder names the other Dataset whose cache the claim holds ("Dataset a"), or something else
// that stops this one from using it, or "" when ds may use it: the claim is marked as ds's, or as a
// Dataset's that no longer exists (a retained cache, adopted by its next Dataset), or it is a claim
// nobody marked that ds names as its existingClaim (or that pqcache created for ds before claims
// were marked).
func (r *DatasetReconciler) claimHolder(ctx context.Context, ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim) (string, error) {
	uid, other := pvc.Annotations[annotationDatasetUID], pvc.Annotations[AnnotationDataset]
	switch {
	case uid == string(ds.UID):
		return "", nil
	case uid != "":
		var o datav1alpha1.Dataset
		err := r.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: other}, &o)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading dataset %s, which claim %s names: %w", other, pvc.Name, err)
		}
		if err == nil && string(o.UID) == uid {
			return fmt.Sprintf("Dataset %s", other), nil
		}
		return "", nil // its Dataset is gone
	case ds.Spec.Volume.ExistingClaim != "":
		return "", nil
	}
	// A claim with the name pqcache derives for ds, not marked: pqcache's own from before claims were
	// marked, or a claim of someone else's, which pqcache must not adopt (and delete with ds).
	if metav1.IsControlledBy(pvc, ds) || (pvc.Labels[labelManagedBy] == "pqcache" && pvc.Labels[LabelDataset] == labelValue(ds.Name)) {
		return "", nil
	}
	return fmt.Sprintf("something else (it was not created by pqcache for this Dataset; to use it, set volume.existingClaim: %s)", pvc.Name), nil
}

// markClaim records on an existing claim that it holds ds's cache. The patch carries the claim's
// resourceVersion: of two Datasets marking one claim at once, one wins and the other sees it marked.
func (r *DatasetReconciler) markClaim(ctx context.Context, ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Annotations[annotationDatasetUID] == string(ds.UID) && pvc.Annotations[AnnotationDataset] == ds.Name {
		return nil
	}
	orig := pvc.DeepCopy()
	setHolder(pvc, ds)
	return r.Patch(ctx, pvc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// neededCapacity is the claim size the last sync asked for when it was refused for lack of room:
// the current size plus what was missing, with the headroom of a sized claim; zero otherwise.
func neededCapacity(ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim) resource.Quantity {
	ls := ds.Status.LastSync
	if ls == nil || ls.Reason != datav1alpha1.ReasonInsufficientCapacity || ls.NeededBytes == 0 {
		return resource.Quantity{}
	}
	// From the size the volume has now, not the one requested: a resize still in progress must not
	// be counted twice.
	cur, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	if !ok {
		cur = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	return sizeForListing(cur.Value() + ls.NeededBytes)
}

func maxQuantity(a, b resource.Quantity) resource.Quantity {
	if b.Cmp(a) > 0 {
		return b
	}
	return a
}

// sizeFromListing runs a dry-run Job that lists the source, and returns the claim size for what it
// found. While the Job runs, or while a failed one backs off, it sets facts.sizing.
func (r *DatasetReconciler) sizeFromListing(ctx context.Context, ds *datav1alpha1.Dataset, facts *datasetFacts) (resource.Quantity, time.Duration, error) {
	facts.sizing = true
	var job batchv1.Job
	err := r.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: sizeJobName(ds)}, &job)
	if apierrors.IsNotFound(err) {
		if !ds.DeletionTimestamp.IsZero() {
			return resource.Quantity{}, 0, nil // a Dataset being deleted needs no claim sized
		}
		if ls := ds.Status.LastSync; ls != nil && ls.Result == datav1alpha1.SyncFailed && ds.Status.LastFailureTime != nil {
			if wait := ds.Status.LastFailureTime.Add(retryBackoff(ds.Status.FailedAttempts)).Sub(r.Clock.Now()); wait > 0 {
				return resource.Quantity{}, wait, nil
			}
		}
		j := buildSizeJob(ds, r.Worker, facts.hash)
		if err := controllerutil.SetControllerReference(ds, j, r.Scheme()); err != nil {
			return resource.Quantity{}, 0, err
		}
		if err := r.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			return resource.Quantity{}, 0, fmt.Errorf("creating sizing %s: %w", describeJob(j), err)
		}
		return resource.Quantity{}, 0, nil
	}
	if err != nil {
		return resource.Quantity{}, 0, fmt.Errorf("reading sizing job: %w", err)
	}
	js := jobStateOf(&job)
	if !js.Finished {
		return resource.Quantity{}, 0, nil
	}
	pods, err := listJobPods(ctx, r.APIReader, &job)
	if err != nil {
		return resource.Quantity{}, 0, err
	}
	wo := outcomeFromPods(pods)
	if js.Failed || wo.Report == nil || wo.Report.Result != wire.ResultSucceeded {
		// Recorded like a failed sync: the reason (AccessDenied, NoSuchBucket, ...) and the backoff.
		if job.Annotations[AnnotationAfter] == lastRecordedJob(ds) {
			_, summary := recordSync(ds, &job, js, wo)
			// Announced once the status that records it is written (a conflict re-reconciles, and
			// would otherwise announce it again).
			facts.announce = append(facts.announce, func() {
				r.event(ds, &job, corev1.EventTypeWarning, datav1alpha1.EventSyncFailed, "SizeClaim", "Listing the source to size the claim failed: %s", summary)
			})
		}
		return resource.Quantity{}, retryBackoff(ds.Status.FailedAttempts), nil
	}
	facts.sizing = false
	bytes := wo.Report.Plan.CopyBytes
	q := sizeForListing(bytes)
	ds.Status.CapacityNote = fmt.Sprintf("volume.capacity is omitted: sized %s from the listing (%d objects, %d bytes) plus 25%% and 1Gi of headroom",
		q.String(), wo.Report.Plan.Copies, bytes)
	return q, 0, nil
}

// syncJobs lists the Dataset's sync Jobs, oldest first.
func (r *DatasetReconciler) syncJobs(ctx context.Context, ds *datav1alpha1.Dataset) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{LabelDataset: labelValue(ds.Name), LabelComponent: componentSync}); err != nil {
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
func (r *DatasetReconciler) activeSyncs(ctx context.Context) int {
	if r.MaxConcurrentSyncs <= 0 {
		return 0
	}
	return activeJobs(ctx, r.Client, componentSync, r.MaxConcurrentSyncs)
}

// activeJobs counts the running pqcache Jobs of one component across the watched namespaces; when it
// cannot tell, it says full (limit) rather than overshoot a cap.
func activeJobs(ctx context.Context, c client.Client, component string, limit int) int {
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.MatchingLabels{LabelComponent: component, labelManagedBy: "pqcache"}); err != nil {
		return limit
	}
	n := 0
	for i := range list.Items {
		if !jobStateOf(&list.Items[i]).Finished {
			n++
		}
	}
	return n
}

// record reads a finished Job's report from its pod and writes it into status.
func (r *DatasetReconciler) record(ctx context.Context, ds *datav1alpha1.Dataset, j *batchv1.Job, js jobState, facts *datasetFacts) error {
	pods, err := listJobPods(ctx, r.APIReader, j)
	if err != nil {
		return err
	}
	wo := outcomeFromPods(pods)
	prevListing := ds.Status.LastListingSyncTime
	ok, summary := recordSync(ds, j, js, wo)
	if ok && r.Events != nil && ds.Spec.Refresh.Events != nil {
		r.noteUnannounced(ctx, ds, j, prevListing, facts)
	}
	if id := j.Annotations[AnnotationEventBatch]; id != "" && r.Events != nil {
		key := client.ObjectKeyFromObject(ds)
		facts.settledBatch = id
		var outcome *wire.ChangeOutcome
		if wo.Report != nil {
			outcome = wo.Report.Changes
		}
		facts.announce = append(facts.announce, func() {
			if lag, has := r.Events.Done(key, id, ok, outcome); has {
				observeEventLag(ds, lag)
			}
		})
	}
	if j.Annotations[AnnotationTrigger] == TriggerEvents {
		// The change set served its Job.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name}}
		if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("deleting change set %s: %w", j.Name, err)
		}
	}
	// The metrics read the status just recorded; the Dataset object may change after this returns.
	recorded := ds.DeepCopy()
	failedAttempts := ds.Status.FailedAttempts
	log := ctrl.LoggerFrom(ctx).WithValues("dataset", klog.KObj(ds), "job", j.Name)
	facts.announce = append(facts.announce, func() {
		observeSync(recorded, ok)
		if ok {
			log.Info("Sync succeeded", "summary", summary)
			r.event(recorded, j, corev1.EventTypeNormal, datav1alpha1.EventSyncSucceeded, "Sync", "%s", summary)
			return
		}
		log.Info("Sync failed", "summary", summary, "failedAttempts", failedAttempts)
		r.event(recorded, j, corev1.EventTypeNormal, datav1alpha1.EventSyncFailed, "Sync", "Attempt %d failed: %s", failedAttempts, summary)
		if failedAttempts == failingWarningAfter {
			r.event(recorded, j, corev1.EventTypeWarning, datav1alpha1.EventSyncFailing, "Sync", "%d syncs in a row failed; last: %s", failedAttempts, summary)
		}
	})
	return nil
}

// noteUnannounced counts the changes a listing sync just recorded found that no notification had
// announced, and says so: a Warning once it happens twice in a row.
func (r *DatasetReconciler) noteUnannounced(ctx context.Context, ds *datav1alpha1.Dataset, j *batchv1.Job, prevListing *metav1.Time, facts *datasetFacts) {
	evs, _ := r.Events.Status(client.ObjectKeyFromObject(ds))
	found, repeated := noteUnannounced(&ds.Status, prevListing, evs.Pending)
	if found == 0 {
		return
	}
	recorded := ds.DeepCopy()
	log := ctrl.LoggerFrom(ctx).WithValues("dataset", klog.KObj(ds), "job", j.Name)
	facts.announce = append(facts.announce, func() {
		observeFoundByListing(recorded, found)
		log.Info("A listing sync found changes no event notification announced", "changes", found, "repeated", repeated)
		typ, note := corev1.EventTypeNormal, "The %s listing sync found %d changes that no event notification announced; it applied them"
		if repeated {
			typ, note = corev1.EventTypeWarning, "The %s listing sync found %d changes that no event notification announced, as the one before it did: "+
				"the store or the way to the operator loses notifications, and only the schedule repairs them"
		}
		r.event(recorded, j, typ, datav1alpha1.EventChangesFoundByListing, "Sync", note, recorded.Status.LastSync.Trigger, found)
	})
}

// progressPoll is how often a running sync's progress is copied into status, and how soon a pod that
// has not started is looked at again (what the scheduler and kubelet say is not a Job event).
const progressPoll = 10 * time.Second

// quietPoll is how often the pod of a sync that runs without publishing progress is looked at: a
// safety net, since a pod list per running sync every 10 s is load on a large cluster's API server.
const quietPoll = time.Minute

// readProgress copies the progress the worker published on its pod into status, notes what keeps the
// pod from running, if anything, and reports whether it runs.
func (r *DatasetReconciler) readProgress(ctx context.Context, ds *datav1alpha1.Dataset, j *batchv1.Job, facts *datasetFacts) (bool, error) {
	pods, err := listJobPods(ctx, r.APIReader, j)
	if err != nil {
		return false, err
	}
	state, problem, err := jobPodProblem(ctx, r.APIReader, pods, r.Clock.Now())
	if err != nil {
		return false, err
	}
	if state == podStuck {
		facts.podProblem = problem
	}
	if p := progressFromPods(pods); p != nil {
		ds.Status.Progress = p
	}
	return state == podRunning, nil
}

// failingWarningAfter is the number of consecutive failures after which a Warning is sent: one failure
// retried with backoff is routine; three in a row need a person.
const failingWarningAfter = 3

func (r *DatasetReconciler) event(ds *datav1alpha1.Dataset, related client.Object, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(ds, related, typ, reason, action, note, args...)
	}
}

// SetupWithManager registers the reconciler with mgr; it watches the Jobs and claims it owns.
func (r *DatasetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.admission = newAdmission(r.MaxConcurrentSyncs)
	sweep := newAdmissionSweep(r.admission, r.SweepInterval, func() client.Object { return &datav1alpha1.Dataset{} })
	if err := sweep.Add(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.Dataset{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		// When any sync Job finishes or goes, a slot frees up: wake the Datasets queued for one.
		Watches(&batchv1.Job{}, slotFreed(r.admission, componentSync)).
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
