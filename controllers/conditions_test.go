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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

func TestMarkInitializing(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	cond := func(typ string, status metav1.ConditionStatus, gen int64, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: datav1alpha1.ReasonInitializing, Message: "waiting", ObservedGeneration: gen, LastTransitionTime: at}
	}
	tests := []struct {
		name string
		in   []metav1.Condition
		gen  int64
		want []metav1.Condition
		// keepsTime lists the condition types whose LastTransitionTime must not move.
		keepsTime []string
	}{
		{
			name: "a new object gets the outcome Unknown and Reconciling True",
			gen:  1,
			want: []metav1.Condition{
				cond(datav1alpha1.ConditionReady, metav1.ConditionUnknown, 1, metav1.Time{}),
				cond(datav1alpha1.ConditionReconciling, metav1.ConditionTrue, 1, metav1.Time{}),
			},
		},
		{
			name: "a new generation moves observedGeneration but not the transition time",
			in: []metav1.Condition{
				cond(datav1alpha1.ConditionReady, metav1.ConditionUnknown, 1, earlier),
				cond(datav1alpha1.ConditionReconciling, metav1.ConditionTrue, 1, earlier),
			},
			gen: 2,
			want: []metav1.Condition{
				cond(datav1alpha1.ConditionReady, metav1.ConditionUnknown, 2, earlier),
				cond(datav1alpha1.ConditionReconciling, metav1.ConditionTrue, 2, earlier),
			},
			keepsTime: []string{datav1alpha1.ConditionReady, datav1alpha1.ConditionReconciling},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append([]metav1.Condition(nil), tt.in...)
			markInitializing(&got, tt.gen, datav1alpha1.ConditionReady, "waiting")
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, c := range got {
				if c.LastTransitionTime.IsZero() {
					t.Errorf("%s has no LastTransitionTime", c.Type)
				}
			}
			for _, typ := range tt.keepsTime {
				for _, c := range got {
					if c.Type == typ && !c.LastTransitionTime.Equal(&earlier) {
						t.Errorf("%s LastTransitionTime moved to %v", typ, c.LastTransitionTime)
					}
				}
			}
		})
	}
}
