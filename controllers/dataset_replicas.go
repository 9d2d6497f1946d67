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
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasetreplicas,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// replicaPoll is how often a Dataset with copies looks again while they converge: the agents'
// status updates wake it too (it owns the DatasetReplicas), so this is a safety net.
const replicaPoll = 30 * time.Second

// reconcileReplicas is reconcileSync for a Dataset with spec.replicas: no claim and no Job. It plans
// the copies (planReplicas), asks the seed's agent for a listing sync when the refresh policy says
// one is due, records the seed's finished sync, points followers at their sources, and sums the
// copies up in status.
func (r *DatasetReconciler) reconcileReplicas(ctx context.Context, ds *datav1alpha1.Dataset, facts *datasetFacts) (ctrl.Result, error) {
	now := r.Clock.Now()
	sched, err := parseSchedule(ds.Spec.Refresh.Schedule, now)
	if err != nil {
		facts.specError = fmt.Sprintf("refresh.schedule %q: %v", ds.Spec.Refresh.Schedule, err)
		return ctrl.Result{}, nil
	}
	key := types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}
	if err := r.watchEvents(ctx, ds, key); err != nil {
		return ctrl.Result{}, err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	replicas, err := r.replicasOf(ctx, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	prevSeed := ""
	if ds.Status.Replicas != nil {
		prevSeed = ds.Status.Replicas.Seed
	}
	agents, err := r.agentNodes(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planReplicas(ds.Spec.Replicas, nodes.Items, replicas, agents, prevSeed, now)
	seed := replicaOn(replicas, plan.seed)
	r.recordSeedSync(ctx, ds, seed, facts)

	token, d := r.seedToken(ds, plan.seed, seed, sched, key, facts, now)
	if err := r.applyReplicas(ctx, ds, plan, replicas, token, facts.hash); err != nil {
		return ctrl.Result{}, err
	}
	ds.Status.Replicas = replicasStatus(ds, plan)
	facts.replicas = &plan
	wait := replicaPoll
	if d.RequeueAfter > 0 && d.RequeueAfter < wait {
		wait = d.RequeueAfter
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// seedToken is the sync token the seed's DatasetReplica should carry: its current one, or a new one
// when the refresh policy says a sync is due and none is in flight. A batch of event notifications
// asks the seed for a listing sync too: one LIST and the changed objects' GETs, without a pod start;
// the followers copy the generation it publishes.
func (r *DatasetReconciler) seedToken(ds *datav1alpha1.Dataset, seedNode string, seed *datav1alpha1.DatasetReplica, sched cron.Schedule, key types.NamespacedName, facts *datasetFacts, now time.Time) (string, syncDecision) {
	token := ""
	if seed != nil {
		token = seed.Spec.SyncToken
	}
	facts.seedSyncing = seed != nil && token != "" && token != seed.Status.ObservedSyncToken
	batch := r.pendingBatch(ds, key, facts)
	d := decideSync(ds, sched, facts.hash, now, batch)
	ds.Status.NextSyncTime = nil
	if d.NextScheduled != nil {
		ds.Status.NextSyncTime = &metav1.Time{Time: *d.NextScheduled}
	}
	if d.Trigger == "" || facts.seedSyncing || seedNode == "" || !ds.DeletionTimestamp.IsZero() {
		return token, d
	}
	token = syncToken(d.Trigger, facts.hash, now)
	if batch != nil && d.Trigger != TriggerManual && d.Trigger != TriggerSourceChanged {
		token += "." + batch.ID // settled when this sync is recorded
	}
	facts.seedSyncing = true
	return token, d
}

// replicasOf lists the Dataset's DatasetReplicas.
func (r *DatasetReconciler) replicasOf(ctx context.Context, ds *datav1alpha1.Dataset) ([]datav1alpha1.DatasetReplica, error) {
	var list datav1alpha1.DatasetReplicaList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(ds.Name)}); err != nil {
		return nil, fmt.Errorf("listing the copies of %s: %w", ds.Name, err)
	}
	var out []datav1alpha1.DatasetReplica
	for _, rep := range list.Items {
		if rep.Spec.DatasetName == ds.Name && metav1.IsControlledBy(&rep, ds) {
			out = append(out, rep)
		}
	}
	return out, nil
}

func replicaOn(replicas []datav1alpha1.DatasetReplica, node string) *datav1alpha1.DatasetReplica {
	for i := range replicas {
		if replicas[i].Spec.NodeName == node && node != "" {
			return &replicas[i]
		}
	}
	return nil
}

// syncToken names one sync request: its trigger and source hash (recorded with its outcome), and a
// time that makes it new.
func syncToken(trigger, hash string, now time.Time) string {
	return trigger + "." + hash + "." + strconv.FormatInt(now.UnixNano(), 36)
}

// replicaName is the DatasetReplica of ds on node: readable, and unique for every pair of names.
func replicaName(ds, node string) string {
	return fitName(ds+"-"+node, "-"+hashOf(6, ds, node), maxObjectName)
}

// applyReplicas creates and updates the DatasetReplicas of the chosen nodes, and deletes the others.
// The seed gets the sync token and the source hash it was made for.
func (r *DatasetReconciler) applyReplicas(ctx context.Context, ds *datav1alpha1.Dataset, plan replicaPlan, existing []datav1alpha1.DatasetReplica, token, hash string) error {
	chosen := map[string]bool{}
	for _, node := range plan.chosen {
		chosen[node] = true
		if err := r.applyReplica(ctx, ds, plan, replicaOn(existing, node), node, token, hash); err != nil {
			return err
		}
	}
	for i := range existing {
		rep := &existing[i]
		if chosen[rep.Spec.NodeName] {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, rep)); err != nil {
			return fmt.Errorf("removing the copy on %s: %w", rep.Spec.NodeName, err)
		}
		r.event(ds, rep, corev1.EventTypeNormal, datav1alpha1.EventReplicaRemoved, "RemoveReplica",
			"Removed the copy on node %s: the node no longer matches spec.replicas, or is gone", rep.Spec.NodeName)
	}
	return nil
}

// applyReplica makes node's DatasetReplica say what the plan asks of it.
func (r *DatasetReconciler) applyReplica(ctx context.Context, ds *datav1alpha1.Dataset, plan replicaPlan, cur *datav1alpha1.DatasetReplica, node, token, hash string) error {
	want := datav1alpha1.DatasetReplicaSpec{DatasetName: ds.Name, NodeName: node, Role: datav1alpha1.RoleFollower}
	if cur != nil {
		want.Generation, want.Peer = cur.Spec.Generation, cur.Spec.Peer
	}
	if node == plan.seed {
		want.Role, want.SyncToken, want.SourceHash, want.Generation, want.Peer = datav1alpha1.RoleSeed, token, hash, 0, ""
		want.MinGeneration = plan.highest
	} else if peer, ok := plan.peers[node]; ok {
		want.Generation, want.Peer = plan.generation, peer
	}
	if cur != nil {
		if equality.Semantic.DeepEqual(cur.Spec, want) {
			return nil
		}
		updated := cur.DeepCopy()
		updated.Spec = want
		if err := r.Patch(ctx, updated, client.MergeFrom(cur)); err != nil {
			return fmt.Errorf("updating the copy on %s: %w", node, err)
		}
		return nil
	}
	rep := &datav1alpha1.DatasetReplica{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: replicaName(ds.Name, node), Labels: map[string]string{
			datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(ds.Name), datav1alpha1.LabelReplicaNode: datav1alpha1.LabelValue(node),
			labelManagedBy: "pqcache",
		}},
		Spec: want,
	}
	if err := controllerutil.SetControllerReference(ds, rep, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, rep); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the copy on %s: %w", node, err)
	}
	return nil
}

// recordSeedSync records the seed's finished sync, once: lastSync, the manifest summary and the
// backoff state, as recordSync does for a Job.
func (r *DatasetReconciler) recordSeedSync(ctx context.Context, ds *datav1alpha1.Dataset, seed *datav1alpha1.DatasetReplica, facts *datasetFacts) {
	if seed == nil || seed.Status.LastSync == nil {
		return
	}
	token := seed.Spec.SyncToken
	recorded := ""
	if ds.Status.Replicas != nil {
		recorded = ds.Status.Replicas.RecordedSyncToken
	}
	if token == "" || seed.Status.ObservedSyncToken != token || recorded == token {
		return
	}
	trigger, hash, batchID := splitSyncToken(token)
	ls := seed.Status.LastSync.DeepCopy()
	ls.Trigger, ls.SourceHash, ls.SpecGeneration = trigger, hash, ds.Generation
	st := &ds.Status
	st.LastSync = ls
	if st.Replicas == nil {
		st.Replicas = &datav1alpha1.ReplicasStatus{}
	}
	st.Replicas.RecordedSyncToken = token
	if trigger == TriggerManual {
		st.LastManualSync = ds.Spec.Refresh.Manual
	}
	ok := ls.Result == datav1alpha1.SyncSucceeded
	if batchID != "" && r.Events != nil {
		key := client.ObjectKeyFromObject(ds)
		facts.settledBatch = batchID
		facts.announce = append(facts.announce, func() {
			if lag, has := r.Events.Done(key, batchID, ok, nil); has {
				observeEventLag(ds, lag)
			}
		})
	}
	if ok {
		st.Manifest = &datav1alpha1.ManifestSummary{Files: seed.Status.Files, Bytes: seed.Status.Bytes, Generation: seed.Status.Generation, SourceHash: hash}
		st.FailedAttempts, st.LastFailureTime = 0, nil
		st.LastSuccessfulSyncTime, st.LastListingSyncTime = ls.CompletionTime, ls.StartTime
	} else {
		st.FailedAttempts++
		st.LastFailureTime = ls.CompletionTime
	}
	log := ctrl.LoggerFrom(ctx).WithValues("dataset", klog.KObj(ds), "node", seed.Spec.NodeName)
	snapshot := ds.DeepCopy()
	facts.announce = append(facts.announce, func() {
		observeSync(snapshot, ok)
		if ok {
			log.Info("Seed sync succeeded", "generation", seed.Status.Generation, "filesCopied", ls.FilesCopied)
			r.event(snapshot, seed, corev1.EventTypeNormal, datav1alpha1.EventSyncSucceeded, "Sync",
				"The seed on %s published generation %d: %d files copied (%d bytes)", seed.Spec.NodeName, seed.Status.Generation, ls.FilesCopied, ls.BytesCopied)
			return
		}
		log.Info("Seed sync failed", "reason", ls.Reason, "message", ls.Message)
		r.event(snapshot, seed, corev1.EventTypeNormal, datav1alpha1.EventSyncFailed, "Sync", "The seed on %s failed: %s: %s", seed.Spec.NodeName, ls.Reason, ls.Message)
	})
}

// splitSyncToken reads back what syncToken wrote, and the event batch the sync applies, if any.
func splitSyncToken(token string) (trigger, hash, batch string) {
	parts := strings.SplitN(token, ".", 4)
	if len(parts) < 3 {
		return "", "", ""
	}
	if len(parts) == 4 {
		batch = parts[3]
	}
	return parts[0], parts[1], batch
}

// replicasStatus is status.replicas from the plan.
func replicasStatus(ds *datav1alpha1.Dataset, plan replicaPlan) *datav1alpha1.ReplicasStatus {
	st := &datav1alpha1.ReplicasStatus{
		Desired: int32(len(plan.chosen)), Ready: plan.ready, MatchingNodes: int32(plan.matching),
		Seed: plan.seed, Generation: plan.generation, Nodes: plan.nodes,
	}
	st.ReadyOfDesired = fmt.Sprintf("%d/%d", st.Ready, st.Desired)
	st.NodeLabel = datav1alpha1.NodeLabelKey(ds.Namespace, ds.Name)
	if prev := ds.Status.Replicas; prev != nil {
		st.RecordedSyncToken = prev.RecordedSyncToken
	}
	return st
}
