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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// planned is a run's Jobs.
func planned(run *datav1alpha1.BenchRun) []benchJob { return plannedJobs(run) }

func TestAdmissionForgetsEveryKeyOfAnOwner(t *testing.T) {
	a := newAdmission(1)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	k := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	a.Admit(k("run/job-1"), 1, now)
	a.Admit(k("run/job-2"), 1, now)
	a.Admit(k("runner/job-1"), 1, now) // a run whose name starts like the other's
	a.Admit(k("dataset"), 1, now)
	a.ForgetOwner(k("run"))
	if got := a.Waiting(); len(got) != 2 {
		t.Fatalf("after ForgetOwner(run): waiting %v, want runner/job-1 and dataset", got)
	}
	// A missed delete event: the sweep drops the keys of owners that are gone, and only those.
	gone := map[string]bool{"runner": true}
	n := a.Sweep(context.Background(), func(_ context.Context, o types.NamespacedName) bool { return !gone[o.Name] })
	if n != 1 || a.Len() != 1 || a.Waiting()[0] != k("dataset") {
		t.Fatalf("sweep dropped %d, left %v", n, a.Waiting())
	}
}

func TestDerivedNamesAreValidForEveryNameTheAPIAdmits(t *testing.T) {
	longest := strings.Repeat("long-name.", 25) + "end" // 253 characters: the most a custom resource may have
	for _, name := range []string{"a", "tpch", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("x-", 40) + "y", longest} {
		ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-1"}}
		for what, v := range map[string]string{"claim": claimName(ds), "sync job": syncJobName(ds), "size job": sizeJobName(ds)} {
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				t.Errorf("%s name %q for a %d-character Dataset: %v", what, v, len(name), errs)
			}
		}
		for what, v := range map[string]string{"sync job": syncJobName(ds), "label": datav1alpha1.LabelValue(name)} {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s %q for a %d-character name is no label value: %v", what, v, len(name), errs)
			}
		}
		run := &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-2"}, Spec: datav1alpha1.BenchRunSpec{
			Configs: []datav1alpha1.ResourceConfig{{Name: strings.Repeat("c", 32)}},
			Inputs:  []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}, {Type: datav1alpha1.InputMixedStaged}},
		}}
		for _, j := range planned(run) {
			if errs := validation.IsValidLabelValue(j.name); len(errs) > 0 || validation.IsDNS1123Subdomain(j.name) != nil {
				t.Errorf("bench job name %q for a %d-character run is invalid: %v", j.name, len(name), errs)
			}
		}
	}
	if datav1alpha1.LabelValue("short") != "short" || claimName(&datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: "tpch"}}) != "tpch-cache" {
		t.Error("names that fit must stay as they were")
	}
	// Long names that differ only past the cut stay apart.
	a, b := strings.Repeat("a", 80)+"1", strings.Repeat("a", 80)+"2"
	if datav1alpha1.LabelValue(a) == datav1alpha1.LabelValue(b) {
		t.Errorf("LabelValue(%q) == LabelValue(%q)", a, b)
	}
}

func TestBenchJobNamesDoNotCollideAcrossRuns(t *testing.T) {
	run := func(name, uid, config string) *datav1alpha1.BenchRun {
		return &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Spec: datav1alpha1.BenchRunSpec{
			Configs: []datav1alpha1.ResourceConfig{{Name: config}}, Inputs: []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}},
		}}
	}
	// "x-a" with config "b" and "x" with config "a-b" used to share the Job x-a-b-0.
	j1, j2 := planned(run("x-a", "u1", "b"))[0].name, planned(run("x", "u2", "a-b"))[0].name
	if j1 == j2 {
		t.Fatalf("two runs share the Job name %s", j1)
	}
	// The same run asks for the same name every time (a reconcile must find the Job it created).
	if planned(run("x-a", "u1", "b"))[0].name != j1 {
		t.Fatal("a run's Job names are not stable")
	}
	if !regexp.MustCompile(`^x-a-b-[0-9a-f]{8}$`).MatchString(j1) {
		t.Errorf("job name %q does not read as run-config-hash", j1)
	}
}

func TestParseScheduleRefusesWhatNeverOrTooOftenFires(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, bad := range []string{"0 0 30 2 *", "0 0 31 4 *", "@every 1s", "@every 59s", "not a schedule"} {
		if _, err := parseSchedule(bad, now); err == nil {
			t.Errorf("parseSchedule(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"", "@hourly", "@every 1m", "@every 1h30m", "0 0 29 2 *", "*/5 * * * *"} {
		if _, err := parseSchedule(good, now); err != nil {
			t.Errorf("parseSchedule(%q): %v", good, err)
		}
	}
}

func TestWorkerOptionsKeepWhatIsSetAndRefuseAZeroTTL(t *testing.T) {
	got := WorkerOptions{CABundle: &ConfigMapKey{Name: "ca", Key: "ca.crt"}, ServiceAccount: "worker"}.withDefaults()
	if got.Image == "" || got.TTLAfterFinished != time.Hour || got.Resources.Limits == nil {
		t.Errorf("defaults not filled: %+v", got)
	}
	if got.CABundle == nil || got.ServiceAccount != "worker" {
		t.Errorf("an empty image replaced the options that were set: %+v", got)
	}
	for _, ttl := range []time.Duration{time.Second, 59 * time.Second, 100 * 365 * 24 * time.Hour} {
		if err := (WorkerOptions{TTLAfterFinished: ttl}).validate(); err == nil {
			t.Errorf("TTL %s accepted", ttl)
		}
	}
	if err := (WorkerOptions{TTLAfterFinished: time.Minute}).validate(); err != nil {
		t.Error(err)
	}
}

func TestInspectPodsSaysWhatKeepsAContainerFromStarting(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	scheduled := func(at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
	}
	waiting := func(reason, msg string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "sync", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
	pod := func(conds []corev1.PodCondition, cs, inits []corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds, ContainerStatuses: cs, InitContainerStatuses: inits}}
	}
	for _, tc := range []struct {
		name      string
		pod       corev1.Pod
		state     podState
		reason    string
		contains  string
		wantQuiet bool
	}{
		{"image", pod([]corev1.PodCondition{scheduled(now)}, waiting("ImagePullBackOff", `Back-off pulling image "x"`), nil), podStuck, datav1alpha1.ReasonPodNotStarting, `ImagePullBackOff: Back-off pulling image "x"`, false},
		{"secret, in an init container", pod([]corev1.PodCondition{scheduled(now)}, nil, waiting("CreateContainerConfigError", `secret "s3" not found`)), podStuck, datav1alpha1.ReasonPodNotStarting, `secret "s3" not found`, false},
		{"creating, just scheduled", pod([]corev1.PodCondition{scheduled(now.Add(-5 * time.Second))}, waiting("ContainerCreating", ""), nil), podNotStarted, "", "", false},
		{"creating for long: read its events", pod([]corev1.PodCondition{scheduled(now.Add(-time.Minute))}, waiting("ContainerCreating", ""), nil), podNotStarted, "", "", true},
		{"no room", pod([]corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes"}}, nil, nil), podStuck, datav1alpha1.ReasonUnschedulable, "0/1 nodes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, problem, quiet := inspectPods([]corev1.Pod{tc.pod}, now)
			if state != tc.state || problem.Reason != tc.reason || !strings.Contains(problem.Message, tc.contains) || (quiet != nil) != tc.wantQuiet {
				t.Errorf("inspectPods = %v %+v quiet=%v", state, problem, quiet != nil)
			}
		})
	}
	if state, _, _ := inspectPods([]corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning}}}, now); state != podRunning {
		t.Error("a running pod is not stuck")
	}
}

// TestDatasetReleasesItsQueuePlaceOnEveryExit drives the Dataset reconciler against a fake API (the
// queue is the manager's memory, out of envtest's reach): a Dataset queued behind the cap whose spec
// then fails validation or names a missing claim must give its place back.
func TestDatasetReleasesItsQueuePlaceOnEveryExit(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := datav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "queued", UID: "uid-q"},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "analytics"}},
			Volume: datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("1Gi"))},
		},
	}
	busy := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-sync",
		Labels: map[string]string{LabelComponent: componentSync, labelManagedBy: "pqcache"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ds, busy).WithStatusSubresource(&datav1alpha1.Dataset{}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	r := &DatasetReconciler{Client: c, APIReader: c, Clock: clk, Worker: DefaultWorkerOptions(), MaxConcurrentSyncs: 1, admission: newAdmission(1)}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ds)}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	change := func(mutate func(*datav1alpha1.Dataset)) {
		t.Helper()
		var cur datav1alpha1.Dataset
		if err := c.Get(context.Background(), req.NamespacedName, &cur); err != nil {
			t.Fatal(err)
		}
		mutate(&cur)
		if err := c.Update(context.Background(), &cur); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		breakIt func(*datav1alpha1.Dataset)
	}{
		{"a schedule that never fires", func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Schedule = "0 0 30 2 *" }},
		{"a missing existing claim", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "missing"}
		}},
	} {
		change(func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Schedule, d.Spec.Volume = "", ds.Spec.Volume })
		reconcile()
		if r.admission.Len() != 1 {
			t.Fatalf("%s: the Dataset is not queued behind the busy slot (%d keys)", tc.name, r.admission.Len())
		}
		change(tc.breakIt)
		reconcile()
		if r.admission.Len() != 0 {
			t.Errorf("%s: the Dataset kept its place in the queue", tc.name)
		}
	}
}

func TestSyncArgsCarryTheGenerationsToKeep(t *testing.T) {
	for _, tc := range []struct {
		keep *int32
		want string
	}{{nil, "2"}, {ptr.To[int32](0), "0"}, {ptr.To[int32](5), "5"}} {
		ds := &datav1alpha1.Dataset{Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "b", Prefix: "p/"}},
			Sync:   datav1alpha1.SyncOptions{KeepGenerations: tc.keep},
		}}
		args := syncArgs(ds).Args()
		i := slices.Index(args, "--generations")
		if i < 0 || i+1 >= len(args) || args[i+1] != tc.want {
			t.Errorf("keepGenerations %v: args %v, want --generations %s", tc.keep, args, tc.want)
		}
	}
}

func TestSyncArgsCarryTheVerifyMode(t *testing.T) {
	for mode, want := range map[datav1alpha1.VerifyMode]string{"": "", datav1alpha1.VerifyChecksum: "",
		datav1alpha1.VerifySHA256: "sha256", datav1alpha1.VerifySize: "size"} {
		ds := &datav1alpha1.Dataset{Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{Bucket: "b", Prefix: "p/"}},
			Sync:   datav1alpha1.SyncOptions{Verify: mode},
		}}
		args := syncArgs(ds).Args()
		got := ""
		if i := slices.Index(args, "--verify"); i >= 0 && i+1 < len(args) {
			got = args[i+1]
		}
		if got != want {
			t.Errorf("verify %q: --verify %q in %v, want %q (empty: the worker's default, checksum)", mode, got, args, want)
		}
	}
}
