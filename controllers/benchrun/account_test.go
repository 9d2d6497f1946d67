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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// irsaDataset reads its bucket as the ServiceAccount bucket-reader (a cloud role), with fresh prefixes
// so that every input type applies.
func irsaDataset() *datav1alpha1.Dataset {
	ds := &datav1alpha1.Dataset{}
	ds.Name, ds.Namespace = "tpch", "data"
	ds.Spec.Source.S3 = datav1alpha1.S3Source{Bucket: "analytics",
		Credentials: &datav1alpha1.S3Credentials{ServiceAccountName: "bucket-reader"}}
	ds.Spec.Fresh = []string{"orders/"}
	return ds
}

func accountRun(sa string, inputs ...datav1alpha1.InputType) *datav1alpha1.BenchRun {
	run := &datav1alpha1.BenchRun{}
	run.Name, run.Namespace = "r", "data"
	run.Spec.ServiceAccountName = sa
	for _, in := range inputs {
		run.Spec.Inputs = append(run.Spec.Inputs, datav1alpha1.BenchInput{Type: in})
	}
	return run
}

// A bench pod runs as pqcache's worker account, or as the account its BenchRun names, never as the
// Dataset's (whose cloud role a BenchRun's creator could otherwise borrow), and never with an API
// token, whatever it reads.
func TestBenchPodsRunAsPqcacheOrTheRunsOwnAccount(t *testing.T) {
	opts := jobs.DefaultWorkerOptions()
	opts.ServiceAccount = "pqcache-worker"
	cfg := datav1alpha1.ResourceConfig{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}
	for _, tc := range []struct {
		runSA, want string
		opts        jobs.WorkerOptions
	}{
		{runSA: "", want: "pqcache-worker", opts: opts},
		{runSA: "bucket-reader", want: "bucket-reader", opts: opts},
		{runSA: "", want: "", opts: jobs.DefaultWorkerOptions()},
	} {
		for _, in := range []datav1alpha1.InputType{datav1alpha1.InputVolume, datav1alpha1.InputS3, datav1alpha1.InputMixedDirect, datav1alpha1.InputMixedStaged} {
			for _, engine := range []datav1alpha1.EngineName{datav1alpha1.EngineDuckDB, datav1alpha1.EngineCommand} {
				run := accountRun(tc.runSA, in)
				j := benchJob{engine: datav1alpha1.BenchEngine{Name: engine, Image: "example.test/engine:1", Command: []string{"run"}},
					config: cfg, input: run.Spec.Inputs[0], name: "r-small"}
				pod := buildBenchJob(run, irsaDataset(), j, tc.opts, time.Hour).Spec.Template.Spec
				if pod.ServiceAccountName != tc.want {
					t.Errorf("run account %q, input %s, engine %s: pod runs as %q, want %q", tc.runSA, in, engine, pod.ServiceAccountName, tc.want)
				}
				if !ptr.Equal(pod.AutomountServiceAccountToken, ptr.To(false)) {
					t.Errorf("run account %q, input %s, engine %s: bench pod mounts an API token", tc.runSA, in, engine)
				}
			}
		}
	}
}

// A run that reads the bucket of a Dataset with a ServiceAccount, and names none itself, is refused
// before any Job with what to do; one that reads only the volume, or names an account, is not.
func TestRefusedAccount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     *datav1alpha1.BenchRun
		refused bool
	}{
		{"s3 input without an account", accountRun("", datav1alpha1.InputS3), true},
		{"mixed-direct without an account", accountRun("", datav1alpha1.InputVolume, datav1alpha1.InputMixedDirect), true},
		{"mixed-staged without an account", accountRun("", datav1alpha1.InputMixedStaged), true},
		{"volume only", accountRun("", datav1alpha1.InputVolume), false},
		{"s3 input with the run's account", accountRun("bucket-reader", datav1alpha1.InputS3), false},
		{"during refresh without an account", func() *datav1alpha1.BenchRun {
			r := accountRun("", datav1alpha1.InputVolume)
			r.Spec.DuringRefresh = true
			return r
		}(), true},
	} {
		got := refusedAccount(tc.run, irsaDataset())
		if (got != "") != tc.refused {
			t.Errorf("%s: refusedAccount = %q, want refused %v", tc.name, got, tc.refused)
		}
		if tc.refused && !strings.Contains(got, "set spec.serviceAccountName: bucket-reader") {
			t.Errorf("%s: the reason does not say what to do: %q", tc.name, got)
		}
	}
	noAccount := irsaDataset()
	noAccount.Spec.Source.S3.Credentials = nil
	if got := refusedAccount(accountRun("", datav1alpha1.InputS3), noAccount); got != "" {
		t.Errorf("a Dataset without a ServiceAccount: refusedAccount = %q", got)
	}
}
