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

// Package agent is the node agent: it keeps its node's copies of the Datasets with spec.replicas
// under the node's cache root, with the sync engine in its own process (no Job, no pod start per
// refresh), serves them to other nodes' agents (package agent/peer), and reports each copy in its
// DatasetReplica's status, of which it is the only writer. The controller decides what each copy
// should hold (the seed syncs from the bucket when asked; a follower copies a generation from a
// peer); the agent does it. Like a reconciler, it is thin: the sync engine does the work.
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
)

// retryAfter is when a copy that failed is tried again (the seed's retries are the controller's,
// through new sync tokens).
const retryAfter = 15 * time.Second

// sourceLagRetry is how soon a seed looks again when its cache has not caught up with the Dataset
// spec a sync request was made for.
const sourceLagRetry = 200 * time.Millisecond

// Agent reconciles this node's DatasetReplicas. What it may read and write is the chart's agent
// ClusterRole (charts/pqcache/templates/agent.yaml, which says why it needs each verb).
type Agent struct {
	client.Client
	// Reader reads what the agent does not cache: Secrets.
	Reader client.Reader
	// Node is this node's name.
	Node string
	// Endpoint is where this agent's peer server listens for other nodes (https://POD_IP:PORT).
	Endpoint string
	// PeerAuth sets up requests to other agents: TLS and this agent's own token
	// (agent/peer/identity.Client); tests use a peer.Key.
	PeerAuth peer.ClientAuth
	Copies   *Copies
	Budget   *Budget
	// Reserve is free space on the cache root that no sync takes (bytes): the node's, for its
	// kubelet, images and logs.
	Reserve int64
	Log     *slog.Logger
	// PruneEvery is how often copies the node no longer keeps are removed (default pruneEvery).
	PruneEvery time.Duration
	// InUse, when set, names the copies that pods still read (the CSI driver's published volumes):
	// they are kept until their last reader goes, even when no DatasetReplica asks for them. A nil
	// map means not known yet (csi.AgentSide before the mount container's first report): no pruning.
	InUse func() map[string]bool
	// BucketHTTP, when set, sends the requests to the buckets instead of the agent's shared client
	// (tests put a failing transport there; the agent's command puts its endpoint guard there).
	BucketHTTP aws.HTTPClient
	// AmbientNamespaces are the namespaces whose Datasets may be read with the agent's own identity
	// when they name no Secret ("*": every namespace). Elsewhere such a Dataset is read anonymously
	// (wire.AmbientAllowed, wire.ReasonAmbientCredentialsNotAllowed).
	AmbientNamespaces []string
	// Deadline bounds each sync (cache.Deadline); zero fields take the engine's defaults, which are
	// what the agent runs with (tests set short ones).
	Deadline cache.Deadline
}

// Reconcile brings one copy to what its DatasetReplica asks.
func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rep datav1alpha1.DatasetReplica
	if err := a.Get(ctx, req.NamespacedName, &rep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // its files go with the next Prune
	}
	if rep.Spec.NodeName != a.Node || !rep.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var ds datav1alpha1.Dataset
	if err := a.Get(ctx, client.ObjectKey{Namespace: rep.Namespace, Name: rep.Spec.DatasetName}, &ds); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(&rep, &ds) {
		return ctrl.Result{}, nil // a DatasetReplica of an older Dataset of the same name
	}
	dir := a.Copies.Dir(&ds)
	orig := rep.DeepCopy()
	res := a.converge(ctx, &ds, &rep, dir)
	if err := a.writeStatus(ctx, orig, &rep); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// converge runs the sync the copy needs, if any, and fills rep's status.
func (a *Agent) converge(ctx context.Context, ds *datav1alpha1.Dataset, rep *datav1alpha1.DatasetReplica, dir string) ctrl.Result {
	st := &rep.Status
	st.Endpoint = a.Endpoint
	readGeneration(dir, st)
	switch rep.Spec.Role {
	case datav1alpha1.RoleSeed:
		if rep.Spec.SyncToken == "" || rep.Spec.SyncToken == st.ObservedSyncToken {
			return ctrl.Result{}
		}
		if h := rep.Spec.SourceHash; h != "" && h != syncspec.SourceHash(&ds.Spec) {
			// The request is for a Dataset spec this agent's cache has not seen yet (the two kinds are
			// watched apart): syncing the old source now would be recorded as the new one's.
			return ctrl.Result{RequeueAfter: sourceLagRetry}
		}
		a.sync(ctx, ds, rep, dir, "")
		st.ObservedSyncToken = rep.Spec.SyncToken
	case datav1alpha1.RoleFollower:
		if rep.Spec.Generation == 0 || rep.Spec.Generation == st.Generation || rep.Spec.Peer == "" {
			return ctrl.Result{}
		}
		if !a.sync(ctx, ds, rep, dir, rep.Spec.Peer) {
			return ctrl.Result{RequeueAfter: retryAfter}
		}
	}
	return ctrl.Result{}
}

// readGeneration reports the generation the copy publishes now, from the disk: after a restart, or
// on a node whose disk was replaced, the status says what is really there.
func readGeneration(dir string, st *datav1alpha1.DatasetReplicaStatus) {
	defer readManifestDigest(dir, st.Generation, st)
	kept, cur, err := generations.List(dir)
	if err != nil || cur == 0 {
		st.Generation, st.Files, st.Bytes = 0, 0, 0
		return
	}
	st.Generation = cur
	for _, k := range kept {
		if k.Generation == cur {
			st.Files, st.Bytes = k.Files, k.Bytes
		}
	}
}

// sync runs one sync of the copy: from the bucket (peerURL empty), or of generation
// rep.Spec.Generation from the peer at peerURL with the bucket as fallback. It records the outcome in
// status and says whether it succeeded. A panic in it is a bug that this Dataset's source or copy
// reaches: it fails this copy's sync with wire.ReasonPanicked, is counted, and the agent serves every
// other copy on as before (the seed is retried through the controller's next sync token, a follower
// after retryAfter).
func (a *Agent) sync(ctx context.Context, ds *datav1alpha1.Dataset, rep *datav1alpha1.DatasetReplica, dir, peerURL string) (ok bool) {
	log := a.Log.With("dataset", klog.KObj(ds).String(), "role", rep.Spec.Role)
	start := metav1.Now()
	defer func() {
		if p := recover(); p != nil {
			log.Error("Sync panicked", "panic", p, "stack", string(debug.Stack()))
			a.recordFailure(rep, start, wire.ReasonPanicked, fmt.Errorf("the agent recovered from a panic while syncing this copy: %v", p))
			ok = false
		}
		if rep.Status.LastSync != nil && rep.Status.LastSync.StartTime.Equal(&start) && rep.Status.LastSync.Reason == wire.ReasonPanicked {
			syncPanics.WithLabelValues(ds.Namespace, ds.Name).Inc()
		}
	}()
	cfg, opts, err := SyncOptions(ds, dir)
	if err != nil {
		a.recordFailure(rep, start, wire.ReasonSyncFailed, err)
		return false
	}
	if !syncspec.NamesCredentials(ds) && !wire.AmbientAllowed(a.AmbientNamespaces, ds.Namespace) {
		cfg.Anonymous = true
		opts.AmbientRefused = peerURL == "" // a peer's refusal is not the bucket's
	}
	bucket, err := bucketStore(ctx, a.Reader, ds, cfg, a.BucketHTTP)
	if err != nil {
		a.recordFailure(rep, start, wire.ReasonInvalidCredentials, err)
		return false
	}
	// The node's GET slots are taken per GET, while bytes move, and shared fairly (Budget).
	opts.Parallelism, opts.Slots = min(opts.Parallelism, a.Budget.Total()), a.Budget.For(ds.Namespace+"/"+ds.Name)
	opts.Reserve, opts.Log, opts.Requests = a.Reserve, log, bucket.Requests()
	opts.GenerationAtLeast = rep.Spec.MinGeneration
	// The sync's deadline starts once it has its slots, and ends it (giving them back) however slowly
	// the bucket or the peer answers.
	opts.Deadline = a.Deadline
	var verified *peer.VerifiedStore
	if peerURL != "" {
		p, err := peer.NewStore(ctx, peerURL, a.PeerAuth, Bucket(ds.Namespace, ds.Name))
		if err != nil {
			a.recordFailure(rep, start, wire.ReasonSyncFailed, err)
			return false
		}
		// The peer's listing and answers count only where they are the seed's manifest (trust.go).
		trusted, done, err := trustPeer(ctx, p, rep, dir)
		if err != nil {
			a.recordFailure(rep, start, peerReason(err, wire.ReasonSyncFailed), err)
			return false
		}
		defer done()
		verified = trusted
		opts.Follow = &cache.Follow{Peer: cache.Source{Store: trusted, Prefix: peer.Prefix(rep.Spec.Generation)}, Generation: rep.Spec.Generation}
		opts.Requests = p.Requests()
	}
	rep2, err := cache.Sync(ctx, bucket, opts)
	a.record(rep, start, rep2, err)
	if verified != nil {
		recordPeerRefusal(rep, err, peerURL, verified.Refused())
	}
	readGeneration(dir, &rep.Status)
	log.Info("Synced", "generation", rep.Status.Generation, "result", rep2.Result, "filesCopied", rep2.FilesCopied,
		"fromFallback", rep2.FilesFromFallback, "peer", peerURL, "millis", rep2.DurationMillis)
	return err == nil
}

// record writes a sync's outcome into status: lastSync and the Ready condition.
func (a *Agent) record(rep *datav1alpha1.DatasetReplica, start metav1.Time, r *wire.SyncReport, err error) {
	now := metav1.Now()
	ls := &datav1alpha1.SyncResult{StartTime: &start, CompletionTime: &now, DurationMillis: r.DurationMillis,
		FilesCopied: r.FilesCopied, FilesDeleted: r.FilesDeleted, FilesUnchanged: r.FilesUnchanged, FilesFailed: r.FilesFailed,
		BytesCopied: r.BytesCopied, BytesPerSecond: r.BytesPerSecond, ListRequests: r.Requests.List, GetRequests: r.Requests.Get,
		FilesFromFallback: r.FilesFromFallback, FilesUnverified: r.FilesUnverified, Warning: wire.Truncate(strings.Join(r.Warnings, "; "), 1024)}
	if r.Table != nil {
		ls.TableVersion = new(r.Table.Version)
	}
	if err == nil {
		ls.Result = datav1alpha1.SyncSucceeded
		rep.Status.LastSync = ls
		setReady(rep, metav1.ConditionTrue, datav1alpha1.ReasonSynced, fmt.Sprintf("generation %d published: %d files copied", r.Manifest.Generation, r.FilesCopied))
		return
	}
	reason := r.Reason
	if reason == "" {
		reason = wire.ReasonSyncFailed
	}
	ls.Result, ls.Reason, ls.Message = datav1alpha1.SyncFailed, reason, wire.Truncate(cmp.Or(r.Message, err.Error()), 1024)
	if errors.Is(err, context.Canceled) {
		ls.Message = "the agent stopped during the sync; the last published generation stands"
	}
	rep.Status.LastSync = ls
	setReady(rep, metav1.ConditionFalse, reason, ls.Message)
}

func (a *Agent) recordFailure(rep *datav1alpha1.DatasetReplica, start metav1.Time, reason string, err error) {
	now := metav1.Now()
	msg := wire.Truncate(err.Error(), 1024)
	rep.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncFailed, Reason: reason, Message: msg, StartTime: &start, CompletionTime: &now}
	setReady(rep, metav1.ConditionFalse, reason, msg)
}

func setReady(rep *datav1alpha1.DatasetReplica, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&rep.Status.Conditions, metav1.Condition{Type: datav1alpha1.ConditionReady, Status: s, Reason: reason,
		Message: wire.Truncate(msg, 1024), ObservedGeneration: rep.Generation})
}

// writeStatus patches the status if it changed; a DatasetReplica deleted meanwhile is no error.
func (a *Agent) writeStatus(ctx context.Context, orig, rep *datav1alpha1.DatasetReplica) error {
	if equality.Semantic.DeepEqual(orig.Status, rep.Status) {
		return nil
	}
	if err := a.Status().Patch(ctx, rep, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status of %s: %w", rep.Name, err)
	}
	return nil
}
