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
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/health"
)

// TestGitOpsHealth checks what Argo CD (the shipped Lua) and Flux (kstatus) make of a Dataset in each
// state, with the conditions written by the controller's own code, (benchrun.TestGitOpsHealth does the same for BenchRuns).
func TestGitOpsHealth(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	hash := "h1"
	base := func(mut func(*datav1alpha1.Dataset, *datasetFacts)) *datav1alpha1.Dataset {
		ds := &datav1alpha1.Dataset{
			TypeMeta:   metav1.TypeMeta{APIVersion: datav1alpha1.GroupVersion.String(), Kind: "Dataset"},
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "n", Generation: 2},
		}
		f := datasetFacts{hash: hash}
		mut(ds, &f)
		ds.Status.ObservedGeneration = ds.Generation
		setDatasetConditions(ds, f)
		return ds
	}
	synced := func(ds *datav1alpha1.Dataset) {
		ds.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, JobName: "j1", SourceHash: hash, CompletionTime: &now}
		ds.Status.LastSuccessfulSyncTime = &now
		ds.Status.Manifest = &datav1alpha1.ManifestSummary{Files: 3, Bytes: 30, Generation: 1, SourceHash: hash}
	}
	failed := func(reason string) func(*datav1alpha1.Dataset) {
		return func(ds *datav1alpha1.Dataset) {
			ds.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncFailed, Reason: reason, Message: "it failed", JobName: "j2", SourceHash: hash, CompletionTime: &now}
			ds.Status.FailedAttempts = 1
			ds.Status.LastFailureTime = &now
		}
	}
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j3"}}
	cases := []struct {
		name       string
		ds         *datav1alpha1.Dataset
		argo       string
		flux       status.Status
		argoSubstr string
	}{
		{"first sync running", base(func(_ *datav1alpha1.Dataset, f *datasetFacts) { f.activeJob = running }), "Progressing", status.InProgressStatus, "SyncInProgress"},
		{"ready", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { synced(ds) }), "Healthy", status.CurrentStatus, "Synced"},
		{"ready while refreshing", base(func(ds *datav1alpha1.Dataset, f *datasetFacts) { synced(ds); f.activeJob = running }), "Healthy", status.CurrentStatus, "Synced"},
		{"ready, last refresh failed", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) {
			synced(ds)
			failed(datav1alpha1.ReasonJobFailed)(ds)
			ds.Status.Manifest.SourceHash = hash
		}), "Healthy", status.CurrentStatus, "last refresh failed"},
		{"denied", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { failed(wire.ReasonAccessDenied)(ds) }), "Degraded", status.FailedStatus, "AccessDenied"},
		{"retrying", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { failed(datav1alpha1.ReasonDeadlineExceeded)(ds) }), "Progressing", status.InProgressStatus, "DeadlineExceeded"},
		{"missing claim", base(func(_ *datav1alpha1.Dataset, f *datasetFacts) {
			f.claimError, f.claimReason = "no claim", datav1alpha1.ReasonClaimNotFound
		}), "Degraded", status.FailedStatus, "ClaimNotFound"},
		// Waiting for a person (no data yet, and none coming by itself): kstatus reads Ready=False as
		// InProgress, so Flux health checks should not wait on such a Dataset.
		{"suspended before any sync", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { ds.Spec.Refresh.Suspend = true }), "Suspended", status.InProgressStatus, "suspend"},
		{"not synced, onCreate false", base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { ds.Spec.Refresh.OnCreate = ptr.To(false) }), "Progressing", status.InProgressStatus, "NotSynced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := health.Argo(t, "Dataset", tc.ds)
			if got != tc.argo || !strings.Contains(msg, tc.argoSubstr) {
				t.Errorf("Argo CD health %s (%q), want %s containing %q; conditions %+v", got, msg, tc.argo, tc.argoSubstr, tc.ds.Status.Conditions)
			}
			if s := health.Kstatus(t, tc.ds); s != tc.flux {
				t.Errorf("kstatus %s, want %s", s, tc.flux)
			}
		})
	}

	t.Run("a spec the controller has not seen yet", func(t *testing.T) {
		ds := base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { synced(ds) })
		ds.Generation = 3
		if got, _ := health.Argo(t, "Dataset", ds); got != "Progressing" {
			t.Errorf("Argo CD health %s, want Progressing", got)
		}
		if s := health.Kstatus(t, ds); s != status.InProgressStatus {
			t.Errorf("kstatus %s, want InProgress", s)
		}
	})
}
