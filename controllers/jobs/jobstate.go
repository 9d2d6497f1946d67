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

package jobs

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is what a Job's conditions say. Counters are not enough: a Job stopped by its deadline
// has no failed pod to count, only a Failed condition with reason DeadlineExceeded.
type State struct {
	Finished bool
	Failed   bool
	// Reason is the Failed condition's reason (DeadlineExceeded, BackoffLimitExceeded, ...).
	Reason  string
	Message string
	At      time.Time
}

// StateOf reads a Job's terminal conditions.
func StateOf(j *batchv1.Job) State {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return State{Finished: true, At: c.LastTransitionTime.Time}
		case batchv1.JobFailed:
			return State{Finished: true, Failed: true, Reason: c.Reason, Message: c.Message, At: c.LastTransitionTime.Time}
		}
	}
	return State{}
}

// CountActive counts the running pqcache Jobs of one component across the watched namespaces; when it
// cannot tell, it says full (limit) rather than overshoot a cap.
func CountActive(ctx context.Context, c client.Client, component string, limit int) int {
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.MatchingLabels{LabelComponent: component, LabelManagedBy: "pqcache"}); err != nil {
		return limit
	}
	n := 0
	for i := range list.Items {
		if !StateOf(&list.Items[i]).Finished {
			n++
		}
	}
	return n
}
