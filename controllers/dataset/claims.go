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
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// ensureClaim creates the Dataset's claim, or checks that its existing claim is there, and makes the
// claim this Dataset's alone: a claim holds one Dataset's cache (the annotations name it), because
// two Datasets syncing into one volume would prune each other's files. A claim whose size the spec
// omits is sized from a listing first; until that is done, facts.sizing is set and the returned
// duration says when to look again.
func (r *Reconciler) ensureClaim(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound) (time.Duration, error) {
	name := ClaimName(ds)
	ds.Status.ClaimName = name
	existing, found, err := r.readClaim(ctx, ds, name, facts)
	if err != nil || facts.claimError != "" {
		return 0, err
	}
	if ds.Spec.Volume.ExistingClaim != "" {
		return 0, r.adoptClaim(ctx, ds, existing, found, facts)
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
	r.writeClaim(ctx, ds, name, capacity, facts)
	return 0, nil
}

// readClaim reads the claim name (found is false when it does not exist: an empty claim of that
// name), and refuses it (facts.claimError) when it holds
// another Dataset's cache or is someone else's.
func (r *Reconciler) readClaim(ctx context.Context, ds *datav1alpha1.Dataset, name string, facts *syncRound) (*corev1.PersistentVolumeClaim, bool, error) {
	var existing corev1.PersistentVolumeClaim
	err := r.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: name}, &existing)
	if apierrors.IsNotFound(err) {
		existing.Name, existing.Namespace = name, ds.Namespace
		return &existing, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading claim %s: %w", name, err)
	}
	holder, err := r.claimHolder(ctx, ds, &existing)
	if err != nil {
		return nil, false, err
	}
	if holder != "" {
		facts.claimError, facts.claimReason = fmt.Sprintf("claim %s already holds the cache of %s, and two Datasets syncing into one volume would prune each other's files: give Dataset %s a claim of its own", name, holder, ds.Name), datav1alpha1.ReasonClaimInUse
	}
	return &existing, true, nil
}

// adoptClaim makes the user's volume.existingClaim this Dataset's, as it is: pqcache neither sizes
// nor owns it.
func (r *Reconciler) adoptClaim(ctx context.Context, ds *datav1alpha1.Dataset, existing *corev1.PersistentVolumeClaim, found bool, facts *syncRound) error {
	if !found {
		facts.claimError, facts.claimReason = fmt.Sprintf("volume.existingClaim %q does not exist in namespace %s", existing.Name, ds.Namespace), datav1alpha1.ReasonClaimNotFound
		return nil
	}
	if err := r.markClaim(ctx, ds, existing); apierrors.IsConflict(err) {
		return err // changed meanwhile: look again
	} else if err != nil {
		facts.claimError, facts.claimReason = fmt.Sprintf("claim %s: %v", existing.Name, err), datav1alpha1.ReasonClaimFailed
		return nil
	}
	if q, ok := existing.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		ds.Status.CapacityBytes = q.Value()
	}
	return nil
}

// writeClaim creates the Dataset's claim of capacity, or grows it where allowed, marks it as the
// Dataset's and sets its owner by the reclaim policy; a failure goes into facts.claimError.
func (r *Reconciler) writeClaim(ctx context.Context, ds *datav1alpha1.Dataset, name string, capacity resource.Quantity, facts *syncRound) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ds.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, pvc, func() error {
		if pvc.CreationTimestamp.IsZero() {
			pvc.Labels = map[string]string{jobs.LabelName: "pqcache", jobs.LabelManagedBy: "pqcache", jobs.LabelDataset: datav1alpha1.LabelValue(ds.Name)}
			pvc.Spec.AccessModes = ds.Spec.Volume.AccessModes
			if len(pvc.Spec.AccessModes) == 0 {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
			}
			pvc.Spec.StorageClassName = ds.Spec.Volume.StorageClassName
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: capacity}
		} else if ptr.Deref(ds.Spec.Volume.AllowExpansion, false) {
			growClaim(ds, pvc, capacity)
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
		return
	}
	if op == controllerutil.OperationResultCreated {
		facts.news.event(pvc, corev1.EventTypeNormal, datav1alpha1.EventClaimCreated, "CreateClaim", "Created claim %s of %s", name, capacity.String())
	}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		ds.Status.CapacityBytes = q.Value()
	}
}

// growClaim raises an expandable claim's request. Only growth is possible, and only where the
// StorageClass allows expansion (the API server refuses it otherwise, and the error lands in the
// condition): to a larger spec.volume.capacity, or to what a sync refused for lack of room needs.
func growClaim(ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim, capacity resource.Quantity) {
	want := maxQuantity(capacity, neededCapacity(ds, pvc))
	if cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; want.Cmp(cur) > 0 {
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		ds.Status.CapacityNote = fmt.Sprintf("grown from %s to %s (volume.allowExpansion)", cur.String(), want.String())
	}
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
func (r *Reconciler) claimHolder(ctx context.Context, ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim) (string, error) {
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
	if metav1.IsControlledBy(pvc, ds) || (pvc.Labels[jobs.LabelManagedBy] == "pqcache" && pvc.Labels[jobs.LabelDataset] == datav1alpha1.LabelValue(ds.Name)) {
		return "", nil
	}
	return fmt.Sprintf("something else (it was not created by pqcache for this Dataset; to use it, set volume.existingClaim: %s)", pvc.Name), nil
}

// markClaim records on an existing claim that it holds ds's cache. The patch carries the claim's
// resourceVersion: of two Datasets marking one claim at once, one wins and the other sees it marked.
func (r *Reconciler) markClaim(ctx context.Context, ds *datav1alpha1.Dataset, pvc *corev1.PersistentVolumeClaim) error {
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
	if ls == nil || ls.Reason != wire.ReasonInsufficientCapacity || ls.NeededBytes == 0 {
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
func (r *Reconciler) sizeFromListing(ctx context.Context, ds *datav1alpha1.Dataset, facts *syncRound) (resource.Quantity, time.Duration, error) {
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
		if err := r.ensureWorkerAccount(ctx, ds); err != nil {
			return resource.Quantity{}, 0, err
		}
		if err := r.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			return resource.Quantity{}, 0, fmt.Errorf("creating sizing %s: %w", jobs.Describe(j), err)
		}
		return resource.Quantity{}, 0, nil
	}
	if err != nil {
		return resource.Quantity{}, 0, fmt.Errorf("reading sizing job: %w", err)
	}
	js := jobs.StateOf(&job)
	if !js.Finished {
		return resource.Quantity{}, 0, nil
	}
	pods, err := jobs.ListJobPods(ctx, r.APIReader, &job)
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
			facts.news.event(&job, corev1.EventTypeWarning, datav1alpha1.EventSyncFailed, "SizeClaim", "Listing the source to size the claim failed: %s", summary)
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

// ClaimName is the PersistentVolumeClaim that holds a Dataset's cache.
func ClaimName(ds *datav1alpha1.Dataset) string {
	if ds.Spec.Volume.ExistingClaim != "" {
		return ds.Spec.Volume.ExistingClaim
	}
	return jobs.FitName(ds.Name, "-cache", jobs.MaxObjectName)
}

// sizeJobName names the Job that lists the source to size a claim, per round like syncJobName.
func sizeJobName(ds *datav1alpha1.Dataset) string { return roundJobName(ds, jobs.ComponentSize) }

// buildSizeJob returns the Job that lists the source, as a dry run into an empty directory, so that a
// claim whose Dataset omits volume.capacity can be sized from what it will hold. It needs no claim.
func buildSizeJob(ds *datav1alpha1.Dataset, opts jobs.WorkerOptions, hash string) *batchv1.Job {
	j := buildSyncJob(ds, opts, TriggerSizing, hash)
	j.Name = sizeJobName(ds)
	j.Labels[jobs.LabelComponent] = jobs.ComponentSize
	j.Spec.Template.Labels[jobs.LabelComponent] = jobs.ComponentSize
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1800)
	c := &j.Spec.Template.Spec.Containers[0]
	args := wire.SyncArgs{Source: syncspec.SourceURL(ds), Dir: "/plan", SyncOptions: jobs.SourceOptions(ds)}
	args.DryRun, args.Progress, args.ReportFile = true, "none", corev1.TerminationMessagePathDefault
	c.Args = args.Args()
	// The listing needs no claim: an empty directory stands in for the volume.
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == "data" {
			c.VolumeMounts[i].MountPath = "/plan"
		}
	}
	for i, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == "data" {
			j.Spec.Template.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
	}
	return j
}

// sizeForListing is the claim size for bytes of objects: 25% and 1 GiB of headroom, rounded up to
// whole GiB.
func sizeForListing(bytes int64) resource.Quantity {
	const gi = int64(1) << 30
	want := bytes + bytes/4 + gi
	return *resource.NewQuantity((want+gi-1)/gi*gi, resource.BinarySI)
}
