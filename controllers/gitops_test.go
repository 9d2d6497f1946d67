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
	"os"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// argoHealth runs an Argo CD health script, as it stands in config/argocd/argocd-cm-patch.yaml (what
// users merge into argocd-cm), on obj, the way Argo CD does: obj as a global table, a table returned.
func argoHealth(t *testing.T, key string, obj runtime.Object) (string, string) {
	t.Helper()
	data, err := os.ReadFile("../config/argocd/argocd-cm-patch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	script, ok := cm.Data["resource.customizations.health.data.pqcache.dev_"+key]
	if !ok {
		t.Fatalf("no health check for %s", key)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, m))
	if err := L.DoString(script); err != nil {
		t.Fatalf("running the %s health script: %v", key, err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the %s health script returned %v", key, L.Get(-1))
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, x := range v {
			t.RawSetString(k, toLua(L, x))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, x := range v {
			t.Append(toLua(L, x))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic("unexpected type")
}

func kstatusCompute(t *testing.T, obj runtime.Object) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// TestGitOpsHealth checks what Argo CD (the shipped Lua) and Flux (kstatus) make of a Dataset in each
// state, with the conditions written by the controller's own code, and of a BenchRun.
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
			got, msg := argoHealth(t, "Dataset", tc.ds)
			if got != tc.argo || !strings.Contains(msg, tc.argoSubstr) {
				t.Errorf("Argo CD health %s (%q), want %s containing %q; conditions %+v", got, msg, tc.argo, tc.argoSubstr, tc.ds.Status.Conditions)
			}
			if s := kstatusCompute(t, tc.ds); s != tc.flux {
				t.Errorf("kstatus %s, want %s", s, tc.flux)
			}
		})
	}

	t.Run("a spec the controller has not seen yet", func(t *testing.T) {
		ds := base(func(ds *datav1alpha1.Dataset, _ *datasetFacts) { synced(ds) })
		ds.Generation = 3
		if got, _ := argoHealth(t, "Dataset", ds); got != "Progressing" {
			t.Errorf("Argo CD health %s, want Progressing", got)
		}
		if s := kstatusCompute(t, ds); s != status.InProgressStatus {
			t.Errorf("kstatus %s, want InProgress", s)
		}
	})

	run := func(conds ...metav1.Condition) *datav1alpha1.BenchRun {
		r := &datav1alpha1.BenchRun{
			TypeMeta:   metav1.TypeMeta{APIVersion: datav1alpha1.GroupVersion.String(), Kind: "BenchRun"},
			ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "n", Generation: 1},
		}
		r.Status.ObservedGeneration = 1
		for _, c := range conds {
			c.ObservedGeneration = 1
			meta.SetStatusCondition(&r.Status.Conditions, c)
		}
		return r
	}
	initializing := run()
	setWaiting(initializing, datav1alpha1.ReasonWaitingForDataset, "Waiting for Dataset \"d\" to be Ready")
	// A run that completed with noisy times, as the controller finishes it.
	noisy := run()
	setWaiting(noisy, datav1alpha1.ReasonRunning, "1 of 1 Jobs running")
	finishRun(noisy, datav1alpha1.ReasonNoisy, "1 runs completed, but their times are noisy", time.Now())
	for _, tc := range []struct {
		name string
		run  *datav1alpha1.BenchRun
		argo string
		flux status.Status
	}{
		{"initializing", initializing, "Progressing", status.InProgressStatus},
		{"succeeded", run(metav1.Condition{Type: datav1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonCompleted}), "Healthy", status.CurrentStatus},
		{"succeeded, noisy", noisy, "Healthy", status.CurrentStatus},
		{"failed", run(
			metav1.Condition{Type: datav1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: datav1alpha1.ReasonOOMKilled, Message: "q9 OOMKilled at 2Gi"},
			metav1.Condition{Type: datav1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonOOMKilled, Message: "q9 OOMKilled at 2Gi"},
		), "Degraded", status.FailedStatus},
	} {
		t.Run("benchrun "+tc.name, func(t *testing.T) {
			if got, _ := argoHealth(t, "BenchRun", tc.run); got != tc.argo {
				t.Errorf("Argo CD health %s, want %s", got, tc.argo)
			}
			if s := kstatusCompute(t, tc.run); s != tc.flux {
				t.Errorf("kstatus %s, want %s", s, tc.flux)
			}
		})
	}
}
