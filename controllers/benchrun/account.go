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

package benchrun

import (
	"context"
	"fmt"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// Who a BenchRun's pods run as. A BenchRun must not run with more than its creator may: creating
// a BenchRun needs no right to create pods, and a pod may run as any ServiceAccount of its
// namespace. So query pods run as pqcache's own worker account, and as another only when the
// BenchRun names it (spec.serviceAccountName, which the chart's admission policy admits only from
// a user who may create pods there). The Dataset's serviceAccountName is its syncs' identity and is
// never lent to a BenchRun: whoever could create a BenchRun would read the bucket with that role.

// benchServiceAccount is the account of a run's query pods: the run's own, else pqcache's worker
// account, else "" (the namespace's default).
func benchServiceAccount(run *datav1alpha1.BenchRun, opts jobs.WorkerOptions) string {
	if run.Spec.ServiceAccountName != "" {
		return run.Spec.ServiceAccountName
	}
	return opts.ServiceAccount
}

// refusedAccount says why a run cannot read its Dataset's bucket: the Dataset reads it as a
// ServiceAccount (a cloud role), and the run, which reads the bucket, names none. Without it the
// engine would read the bucket as whatever the node offers, or be denied in each Job's log; refusing
// before any Job says what to do.
func refusedAccount(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) string {
	sa := jobs.CredentialsAccount(ds)
	if sa == "" || run.Spec.ServiceAccountName != "" || !runReadsBucket(run) {
		return ""
	}
	return fmt.Sprintf("Dataset %q reads its bucket as ServiceAccount %q (spec.source.s3.credentials.serviceAccountName), which a BenchRun does not borrow: "+
		"set spec.serviceAccountName: %s on the BenchRun (its creator must be allowed to create pods in the namespace), or read only the volume (inputs: [{type: volume}])", ds.Name, sa, sa)
}

// runReadsBucket says whether any Job of the run reads the Dataset's bucket: an input that reads
// S3, a staged input's stage step, or the rewrites of a run during refreshes.
func runReadsBucket(run *datav1alpha1.BenchRun) bool {
	if run.Spec.DuringRefresh {
		return true
	}
	for _, in := range run.Spec.Inputs {
		if readsS3(in) || in.Type == datav1alpha1.InputMixedStaged {
			return true
		}
	}
	return false
}

// ensureBenchAccount makes, before a Job of run starts, pqcache's worker account in the run's
// namespace when the run's pods run as it (the Dataset controller makes it only before a sync Job,
// and a Dataset copied by the node agents starts none: every bench pod was refused, "serviceaccount
// pqcache-worker not found"). The run becomes one of its owners, beside any Dataset's; an account of
// that name that pqcache did not make is left as it is. Bench pods mount no token, so the account
// needs no binding.
func (r *Reconciler) ensureBenchAccount(ctx context.Context, run *datav1alpha1.BenchRun) error {
	if run.Spec.ServiceAccountName != "" || r.Worker.ServiceAccount == "" {
		return nil
	}
	return jobs.ShareWorkerAccount(ctx, r.Client, r.APIReader, run, r.Worker.ServiceAccount)
}
