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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/test/health"
)

// TestGitOpsHealth checks what Argo CD (the shipped Lua) and Flux (kstatus) make of a BenchRun in each
// state, with the conditions written by the controller's own code.
func TestGitOpsHealth(t *testing.T) {
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
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := health.Argo(t, "BenchRun", tc.run); got != tc.argo {
				t.Errorf("Argo CD health %s, want %s", got, tc.argo)
			}
			if s := health.Kstatus(t, tc.run); s != tc.flux {
				t.Errorf("kstatus %s, want %s", s, tc.flux)
			}
		})
	}
}
