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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// replicaFixture is a Dataset with copies on nodes a and b, whose seed on a has just finished the
// sync its token asked for, applying event batch "b1".
func replicaFixture(t *testing.T) (*datav1alpha1.Dataset, client.Client, string) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := datav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lake", UID: "uid-lake", Generation: 2, CreationTimestamp: metav1.NewTime(planNow.Add(-time.Hour))},
		Spec: datav1alpha1.DatasetSpec{
			Source:   datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics"}},
			Replicas: &datav1alpha1.ReplicaPolicy{},
		},
	}
	hash := syncspec.SourceHash(&ds.Spec)
	ds.Status.Replicas = &datav1alpha1.ReplicasStatus{Seed: "a"}
	token := syncToken(TriggerEvents, hash, planNow) + ".b1"
	seed := testReplica("a", 3, 0, "")
	seed.ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: replicaName("lake", "a"), Labels: map[string]string{datav1alpha1.LabelReplicaDataset: "lake"}}
	seed.OwnerReferences = []metav1.OwnerReference{{APIVersion: datav1alpha1.GroupVersion.String(), Kind: "Dataset", Name: "lake", UID: "uid-lake", Controller: ptr.To(true)}}
	seed.Spec.DatasetName, seed.Spec.Role, seed.Spec.SyncToken = "lake", datav1alpha1.RoleSeed, token
	done := metav1.NewTime(planNow)
	seed.Status.ObservedSyncToken, seed.Status.Files, seed.Status.Bytes = token, 4, 400
	seed.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, StartTime: &done, CompletionTime: &done, FilesCopied: 1}
	a, b := testNode("a", true, 0, nil), testNode("b", true, 0, nil)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ds, &a, &b, &seed).Build()
	return ds, c, token
}

// TestReplicaReconcilerReturnsWhatTheDatasetShouldSay checks the replica half's contract: it leaves
// the Dataset it was given alone, returns the status to apply with the seed's sync recorded, and the
// news of that sync (its metrics, event and settled batch) as data, for Reconcile to tell after the
// status write. The batch the recorded sync applied starts no second sync.
func TestReplicaReconcilerReturnsWhatTheDatasetShouldSay(t *testing.T) {
	ds, c, token := replicaFixture(t)
	asRead := ds.DeepCopy()
	copies := replicaReconciler{client: c, apiReader: c}
	in := replicaInput{ds: ds, hash: syncspec.SourceHash(&ds.Spec), pending: &EventBatch{ID: "b1"}, now: planNow}
	out, err := copies.reconcile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(asRead, ds) {
		t.Errorf("reconcile changed the Dataset it was given: %s", cmp.Diff(asRead, ds))
	}
	st := out.status
	if st.LastSync == nil || st.LastSync.Trigger != TriggerEvents || st.Replicas.RecordedSyncToken != token || st.Manifest == nil || st.Manifest.Generation != 3 {
		t.Errorf("the seed's sync is not recorded: lastSync %+v, replicas %+v, manifest %+v", st.LastSync, st.Replicas, st.Manifest)
	}
	if out.copies == nil || out.copies.seedSyncing || out.copies.plan.seed != "a" || len(out.copies.plan.chosen) != 2 {
		t.Errorf("copies %+v, want seed a of 2 copies, not syncing (batch b1 is settled by the recorded sync)", out.copies)
	}
	if len(out.news.syncs) != 1 || !out.news.syncs[0].ok || !out.news.settles("b1") || len(out.news.events) != 1 ||
		out.news.events[0].reason != datav1alpha1.EventSyncSucceeded {
		t.Errorf("news %+v, want one succeeded sync, batch b1 settled and its event", out.news)
	}
	var reps datav1alpha1.DatasetReplicaList
	if err := c.List(context.Background(), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps.Items) != 2 {
		t.Fatalf("%d DatasetReplicas, want the seed's and a follower's", len(reps.Items))
	}
	for _, r := range reps.Items {
		if r.Spec.NodeName == "a" && r.Spec.SyncToken != token {
			t.Errorf("the seed was asked for another sync: token %q, want %q", r.Spec.SyncToken, token)
		}
	}

	// The status written, the next reconcile records nothing again.
	ds.Status = out.status
	again, err := copies.reconcile(context.Background(), replicaInput{ds: ds, hash: in.hash, now: planNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.news.syncs) != 0 || len(again.news.events) != 0 || again.status.FailedAttempts != 0 {
		t.Errorf("the seed's sync was recorded twice: news %+v", again.news)
	}
}

// TestSeedTokenAsksTheSeedOnce: a due sync gets a new token, unless the seed runs one already.
func TestSeedTokenAsksTheSeedOnce(t *testing.T) {
	ds := &datav1alpha1.Dataset{Spec: datav1alpha1.DatasetSpec{Refresh: datav1alpha1.RefreshPolicy{Manual: "now"}}}
	in := replicaInput{hash: "h", now: planNow}
	seed := testReplica("a", 1, 0, "")
	token, syncing, _ := seedToken(ds, in, "a", &seed, nil)
	if !syncing || token != syncToken(TriggerManual, "h", planNow) {
		t.Errorf("token %q, syncing %v: want a new manual token", token, syncing)
	}
	seed.Spec.SyncToken = "Initial.h.1" // asked for, not yet observed
	if token, syncing, _ := seedToken(ds, in, "a", &seed, nil); !syncing || token != "Initial.h.1" {
		t.Errorf("token %q, syncing %v: want the sync in flight kept", token, syncing)
	}
	if token, syncing, _ := seedToken(ds, in, "", nil, nil); syncing || token != "" {
		t.Errorf("token %q, syncing %v: no seed, no sync", token, syncing)
	}
}

// TestCopiesThatCannotBeWrittenLeaveTheConditionsSound: when the DatasetReplicas cannot be written,
// the reconcile fails with that error, and the conditions (which read no plan then) still follow:
// they once read the plan of the seed asked to sync, found none, and panicked.
func TestCopiesThatCannotBeWrittenLeaveTheConditionsSound(t *testing.T) {
	ds, c, _ := replicaFixture(t)
	ds.Spec.Refresh.Manual = "again" // the seed is asked for a sync: the plan names it in Syncing
	refused := errors.New("refused")
	failing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*datav1alpha1.DatasetReplica); ok {
				return refused
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
	r := &Reconciler{Client: failing, APIReader: failing, Clock: clocktesting.NewFakeClock(planNow)}
	step, err := r.reconcileCopies(context.Background(), ds, syncspec.SourceHash(&ds.Spec))
	if !errors.Is(err, refused) {
		t.Fatalf("error %v, want the refused create", err)
	}
	if step.facts.copies != nil {
		t.Errorf("copies %+v, want none: they were not applied", step.facts.copies)
	}
	setDatasetConditions(ds, step.facts)
	if c := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady); c == nil {
		t.Error("no Ready condition")
	}
}
