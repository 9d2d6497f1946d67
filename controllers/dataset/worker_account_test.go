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
	"testing"

	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// accountDataset reads its bucket as the ServiceAccount bucket-reader (a cloud role).
func accountDataset() *datav1alpha1.Dataset {
	ds := &datav1alpha1.Dataset{}
	ds.Name, ds.Namespace = "tpch", "data"
	ds.Spec.Source.S3 = datav1alpha1.S3Source{Bucket: "analytics",
		Credentials: &datav1alpha1.S3Credentials{ServiceAccountName: "bucket-reader"}}
	return ds
}

// A sync pod mounts an API token only as pqcache's worker account, the one allowed to publish live
// progress; as the Dataset's own account (a cloud role) or the namespace's default it mounts none.
func TestSyncPodsMountATokenOnlyForProgress(t *testing.T) {
	withProgress := jobs.DefaultWorkerOptions()
	withProgress.ServiceAccount = "pqcache-worker"
	plain := accountDataset()
	plain.Spec.Source.S3.Credentials = nil
	for _, tc := range []struct {
		name      string
		ds        *datav1alpha1.Dataset
		opts      jobs.WorkerOptions
		wantSA    string
		wantToken bool
	}{
		{"worker account", plain, withProgress, "pqcache-worker", true},
		{"Dataset's account", accountDataset(), withProgress, "bucket-reader", false},
		{"no account", plain, jobs.DefaultWorkerOptions(), "", false},
	} {
		pod := syncPod(tc.ds, tc.opts, syncArgs(tc.ds))
		if pod.ServiceAccountName != tc.wantSA || ptr.Deref(pod.AutomountServiceAccountToken, true) != tc.wantToken {
			t.Errorf("%s: pod runs as %q with token %v, want %q with token %v", tc.name, pod.ServiceAccountName,
				ptr.Deref(pod.AutomountServiceAccountToken, true), tc.wantSA, tc.wantToken)
		}
	}
}
