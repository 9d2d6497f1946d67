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
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
)

func TestDerivedNamesAreValidForEveryNameTheAPIAdmits(t *testing.T) {
	longest := strings.Repeat("long-name.", 25) + "end" // 253 characters: the most a custom resource may have
	for _, name := range []string{"a", "tpch", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("x-", 40) + "y", longest} {
		ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-1"}}
		for what, v := range map[string]string{"claim": ClaimName(ds), "sync job": syncJobName(ds), "size job": sizeJobName(ds)} {
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				t.Errorf("%s name %q for a %d-character Dataset: %v", what, v, len(name), errs)
			}
		}
		for what, v := range map[string]string{"sync job": syncJobName(ds), "label": datav1alpha1.LabelValue(name)} {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s %q for a %d-character name is no label value: %v", what, v, len(name), errs)
			}
		}
	}
	if datav1alpha1.LabelValue("short") != "short" || ClaimName(&datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: "tpch"}}) != "tpch-cache" {
		t.Error("names that fit must stay as they were")
	}
	// Long names that differ only past the cut stay apart.
	a, b := strings.Repeat("a", 80)+"1", strings.Repeat("a", 80)+"2"
	if datav1alpha1.LabelValue(a) == datav1alpha1.LabelValue(b) {
		t.Errorf("LabelValue(%q) == LabelValue(%q)", a, b)
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
		Labels: map[string]string{jobs.LabelComponent: jobs.ComponentSync, jobs.LabelManagedBy: "pqcache"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ds, busy).WithStatusSubresource(&datav1alpha1.Dataset{}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	r := &Reconciler{Client: c, APIReader: c, Clock: clk, Worker: jobs.DefaultWorkerOptions(), MaxConcurrentSyncs: 1, admission: admission.NewQueue(1)}
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
