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

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// A runner killed between queries leaves the summary it wrote after its last finished query: status
// keeps what was measured and names, as failed with the container's fate, each query it did not
// finish (before, one "*" entry stood for the whole run and failedQueries named none).
func TestARunnerKilledBetweenQueriesNamesWhatItDidNotFinish(t *testing.T) {
	partial := &wire.BenchResult{Engine: "duckdb", Iterations: 1, Queries: []wire.QueryResult{{Name: "q1", Status: wire.StatusSucceeded}},
		Unfinished: []string{"q2", "q3"}}
	msg, err := wire.EncodeBenchSummary(partial, wire.TerminationMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(reason string, message []byte) []corev1.Pod {
		return []corev1.Pod{{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: benchContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: reason, Message: string(message),
				FinishedAt: metav1.Now()}}}}}}}
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}
	for _, tc := range []struct {
		name   string
		state  jobs.State
		pods   []corev1.Pod
		want   []datav1alpha1.QueryResult
		failed []string
	}{
		{"OOM-killed after q1", jobs.State{Finished: true, Failed: true}, pod("OOMKilled", msg),
			[]datav1alpha1.QueryResult{{Name: "q1", Status: datav1alpha1.QuerySucceeded}, {Name: "q2", Status: datav1alpha1.QueryOOMKilled}, {Name: "q3", Status: datav1alpha1.QueryOOMKilled}},
			[]string{"q2", "q3"}},
		{"stopped by the deadline after q1", jobs.State{Finished: true, Failed: true, Reason: batchv1.JobReasonDeadlineExceeded}, pod("Error", msg),
			[]datav1alpha1.QueryResult{{Name: "q1", Status: datav1alpha1.QuerySucceeded}, {Name: "q2", Status: datav1alpha1.QueryTimeout}, {Name: "q3", Status: datav1alpha1.QueryTimeout}},
			[]string{"q2", "q3"}},
		{"OOM-killed before any query ended", jobs.State{Finished: true, Failed: true}, pod("OOMKilled", nil),
			[]datav1alpha1.QueryResult{{Name: wire.WholeRun, Status: datav1alpha1.QueryOOMKilled}}, nil},
	} {
		r := benchResultFrom(job, tc.state, tc.pods)
		got := make([]datav1alpha1.QueryResult, len(r.Queries))
		for i, q := range r.Queries {
			got[i] = datav1alpha1.QueryResult{Name: q.Name, Status: q.Status}
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: queries (-want +got):\n%s", tc.name, d)
		}
		if d := cmp.Diff(tc.failed, r.FailedQueries); d != "" {
			t.Errorf("%s: failedQueries (-want +got):\n%s", tc.name, d)
		}
	}
}
