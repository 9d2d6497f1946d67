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
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasetreplicas,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// replicaPoll is how often a Dataset with copies looks again while they converge: the agents'
// status updates wake it too (it owns the DatasetReplicas), so this is a safety net.
const replicaPoll = 30 * time.Second

// replicaReconciler is the half of the Dataset controller that exists because of spec.replicas: no
// claim and no Job. It plans the copies (planReplicas), records the seed's finished sync, asks the
// seed's agent for a listing sync when the refresh policy says one is due, points followers at their
// sources, and sums the copies up in status. It writes DatasetReplicas, never the Dataset: what the
// Dataset should say, and what to tell once it says it, come back as a replicaOutput, so that
// Reconcile writes status once and tells the news only after that write.
type replicaReconciler struct {
	client client.Client
	// apiReader reads the agents' pods uncached (see AgentPods).
	apiReader client.Reader
	// agentPods finds the node agents; nil: only a DatasetReplica no agent ever reported on says NoAgent.
	agentPods *AgentPods
	// recorder sends the events about copies removed: removed whatever becomes of the status write,
	// they are told when they happen. nil: no events.
	recorder events.EventRecorder
}

// replicaInput is what one reconcile of a Dataset's copies starts from.
type replicaInput struct {
	// ds is the Dataset as read; the reconcile does not change it.
	ds *datav1alpha1.Dataset
	// hash is the source hash of its spec, which a new sync token is made from.
	hash  string
	sched cron.Schedule
	// pending is the batch of event notifications waiting for the Dataset; nil: none, or no event source.
	pending *EventBatch
	now     time.Time
}

// replicaOutput is what the Dataset should make of its copies.
type replicaOutput struct {
	// status is the Dataset's status to apply: the seed's sync recorded, the next sync time, and
	// status.replicas (left as it was when the copies could not be applied).
	status datav1alpha1.DatasetStatus
	// copies is what the conditions read; nil when the copies could not be applied.
	copies *copiesFacts
	// news is what to tell once status is written: the seed's recorded sync.
	news         news
	requeueAfter time.Duration
}

// copiesFacts is what the Dataset's conditions follow from, for a Dataset with spec.replicas.
type copiesFacts struct {
	plan replicaPlan
	// seedSyncing is true while the seed's agent runs a sync it was asked for.
	seedSyncing bool
}

// reconcile makes the DatasetReplicas of in.ds say what the plan asks of them, and returns the
// Dataset's status to apply, with the news to tell once it is written.
func (c *replicaReconciler) reconcile(ctx context.Context, in replicaInput) (replicaOutput, error) {
	ds := in.ds.DeepCopy() // its status becomes the output; in.ds stays as read
	nodes, replicas, agents, err := c.read(ctx, ds)
	if err != nil {
		return replicaOutput{status: ds.Status}, err
	}
	prevSeed := ""
	if ds.Status.Replicas != nil {
		prevSeed = ds.Status.Replicas.Seed
	}
	plan := planReplicas(ds.Spec.Replicas, nodes, replicas, agents, prevSeed, in.now)
	seed := replicaOn(replicas, plan.seed)
	out := replicaOutput{news: recordSeedSync(ds, seed)}

	batch := in.pending
	if batch != nil && out.news.settles(batch.ID) {
		batch = nil // the sync just recorded applied it
	}
	token, syncing, d := seedToken(ds, in, plan.seed, seed, batch)
	if err := c.applyReplicas(ctx, ds, plan, replicas, token, in.hash); err != nil {
		out.status = ds.Status
		return out, err
	}
	ds.Status.Replicas = replicasStatus(ds, plan)
	out.status, out.copies = ds.Status, &copiesFacts{plan: plan, seedSyncing: syncing}
	out.requeueAfter = replicaPoll
	if d.RequeueAfter > 0 && d.RequeueAfter < replicaPoll {
		out.requeueAfter = d.RequeueAfter
	}
	return out, nil
}

// read lists what the plan is made from: the nodes, the Dataset's DatasetReplicas, and the nodes
// running a Ready agent (nil: unknown).
func (c *replicaReconciler) read(ctx context.Context, ds *datav1alpha1.Dataset) ([]corev1.Node, []datav1alpha1.DatasetReplica, map[string]bool, error) {
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return nil, nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	replicas, err := c.replicasOf(ctx, ds)
	if err != nil {
		return nil, nil, nil, err
	}
	agents, err := c.agentPods.readyNodes(ctx, c.apiReader)
	if err != nil {
		return nil, nil, nil, err
	}
	return nodes.Items, replicas, agents, nil
}

// seedToken is the sync token the seed's DatasetReplica should carry: its current one, or a new one
// when the refresh policy says a sync is due and none is in flight; syncing says one is in flight
// then. A batch of event notifications asks the seed for a listing sync too: one LIST and the changed
// objects' GETs, without a pod start; the followers copy the generation it publishes. It sets
// ds.Status.NextSyncTime from the decision, which it returns.
func seedToken(ds *datav1alpha1.Dataset, in replicaInput, seedNode string, seed *datav1alpha1.DatasetReplica, batch *EventBatch) (token string, syncing bool, d syncDecision) {
	if seed != nil {
		token = seed.Spec.SyncToken
	}
	syncing = seed != nil && token != "" && token != seed.Status.ObservedSyncToken
	d = decideSync(ds, in.sched, in.hash, in.now, batch)
	ds.Status.NextSyncTime = nil
	if d.NextScheduled != nil {
		ds.Status.NextSyncTime = &metav1.Time{Time: *d.NextScheduled}
	}
	if d.Trigger == "" || syncing || seedNode == "" || !ds.DeletionTimestamp.IsZero() {
		return token, syncing, d
	}
	token = syncToken(d.Trigger, in.hash, in.now)
	if batch != nil && d.Trigger != TriggerManual && d.Trigger != TriggerSourceChanged {
		token += "." + batch.ID // settled when this sync is recorded
	}
	return token, true, d
}

// datasetsWithReplicas maps a node event to the Datasets that keep per-node copies.
func datasetsWithReplicas(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list datav1alpha1.DatasetList
		if err := c.List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing Datasets for a node event")
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if list.Items[i].Spec.Replicas != nil {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// replicasOf lists the Dataset's DatasetReplicas.
func (c *replicaReconciler) replicasOf(ctx context.Context, ds *datav1alpha1.Dataset) ([]datav1alpha1.DatasetReplica, error) {
	var list datav1alpha1.DatasetReplicaList
	if err := c.client.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(ds.Name)}); err != nil {
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
	return jobs.FitName(ds+"-"+node, "-"+jobs.HashOf(6, ds, node), jobs.MaxObjectName)
}

// applyReplicas creates and updates the DatasetReplicas of the chosen nodes, and deletes the others.
// The seed gets the sync token and the source hash it was made for.
func (c *replicaReconciler) applyReplicas(ctx context.Context, ds *datav1alpha1.Dataset, plan replicaPlan, existing []datav1alpha1.DatasetReplica, token, hash string) error {
	chosen := map[string]bool{}
	for _, node := range plan.chosen {
		chosen[node] = true
		if err := c.applyReplica(ctx, ds, plan, replicaOn(existing, node), node, token, hash); err != nil {
			return err
		}
	}
	for i := range existing {
		rep := &existing[i]
		if chosen[rep.Spec.NodeName] {
			continue
		}
		if err := client.IgnoreNotFound(c.client.Delete(ctx, rep)); err != nil {
			return fmt.Errorf("removing the copy on %s: %w", rep.Spec.NodeName, err)
		}
		if c.recorder == nil {
			continue
		}
		c.recorder.Eventf(ds, rep, corev1.EventTypeNormal, datav1alpha1.EventReplicaRemoved, "RemoveReplica",
			"Removed the copy on node %s: the node no longer matches spec.replicas, or is gone", rep.Spec.NodeName)
	}
	return nil
}

// applyReplica makes node's DatasetReplica say what the plan asks of it.
func (c *replicaReconciler) applyReplica(ctx context.Context, ds *datav1alpha1.Dataset, plan replicaPlan, cur *datav1alpha1.DatasetReplica, node, token, hash string) error {
	want := datav1alpha1.DatasetReplicaSpec{DatasetName: ds.Name, NodeName: node, Role: datav1alpha1.RoleFollower}
	if cur != nil {
		want.Generation, want.Peer, want.ManifestDigest = cur.Spec.Generation, cur.Spec.Peer, cur.Spec.ManifestDigest
	}
	if node == plan.seed {
		want.Role, want.SyncToken, want.SourceHash, want.Generation, want.Peer = datav1alpha1.RoleSeed, token, hash, 0, ""
		want.MinGeneration = plan.highest
	} else if peer, ok := plan.peers[node]; ok {
		// The digest comes from the seed's own status, which only the seed's node may write.
		want.Generation, want.Peer, want.ManifestDigest = plan.generation, peer, plan.digest
	}
	if cur != nil {
		if equality.Semantic.DeepEqual(cur.Spec, want) {
			return nil
		}
		updated := cur.DeepCopy()
		updated.Spec = want
		if err := c.client.Patch(ctx, updated, client.MergeFrom(cur)); err != nil {
			return fmt.Errorf("updating the copy on %s: %w", node, err)
		}
		return nil
	}
	rep := &datav1alpha1.DatasetReplica{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: replicaName(ds.Name, node), Labels: map[string]string{
			datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(ds.Name), datav1alpha1.LabelReplicaNode: datav1alpha1.LabelValue(node),
			jobs.LabelManagedBy: "pqcache",
		}},
		Spec: want,
	}
	if err := controllerutil.SetControllerReference(ds, rep, c.client.Scheme()); err != nil {
		return fmt.Errorf("owning the copy on %s: %w", node, err)
	}
	if err := c.client.Create(ctx, rep); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the copy on %s: %w", node, err)
	}
	return nil
}

// recordSeedSync records the seed's finished sync in ds's status, once: lastSync, the manifest
// summary and the backoff state, as recordSync does for a Job. It returns the news to tell once that
// status is written.
func recordSeedSync(ds *datav1alpha1.Dataset, seed *datav1alpha1.DatasetReplica) news {
	var n news
	if seed == nil || seed.Status.LastSync == nil {
		return n
	}
	token := seed.Spec.SyncToken
	recorded := ""
	if ds.Status.Replicas != nil {
		recorded = ds.Status.Replicas.RecordedSyncToken
	}
	if token == "" || seed.Status.ObservedSyncToken != token || recorded == token {
		return n
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
	if batchID != "" {
		n.batches = append(n.batches, batchNews{id: batchID, ok: ok})
	}
	if ok {
		st.Manifest = &datav1alpha1.ManifestSummary{Files: seed.Status.Files, Bytes: seed.Status.Bytes, Generation: seed.Status.Generation, SourceHash: hash}
		st.FailedAttempts, st.LastFailureTime = 0, nil
		st.LastSuccessfulSyncTime, st.LastListingSyncTime = ls.CompletionTime, ls.StartTime
	} else {
		st.FailedAttempts++
		st.LastFailureTime = ls.CompletionTime
	}
	n.syncs = append(n.syncs, syncNews{lastSync: *ls.DeepCopy(), ok: ok})
	node := seed.Spec.NodeName
	if ok {
		n.log("Seed sync succeeded", "node", node, "generation", seed.Status.Generation, "filesCopied", ls.FilesCopied)
		n.event(seed, corev1.EventTypeNormal, datav1alpha1.EventSyncSucceeded, "Sync",
			"The seed on %s published generation %d: %d files copied (%d bytes)", node, seed.Status.Generation, ls.FilesCopied, ls.BytesCopied)
		return n
	}
	n.log("Seed sync failed", "node", node, "reason", ls.Reason, "message", ls.Message)
	n.event(seed, corev1.EventTypeNormal, datav1alpha1.EventSyncFailed, "Sync", "The seed on %s failed: %s: %s", node, ls.Reason, ls.Message)
	return n
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
