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

package plugin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// TestStatusShowsCopies: a Dataset with per-node copies shows how many hold its current generation.
func TestStatusShowsCopies(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	o := &options{now: func() time.Time { return now }}
	ds := datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"}, Status: datav1alpha1.DatasetStatus{
		Manifest:   &datav1alpha1.ManifestSummary{Files: 43, Bytes: 22 << 20, Generation: 4},
		Replicas:   &datav1alpha1.ReplicasStatus{Desired: 3, Ready: 2, ReadyOfDesired: "2/3", Generation: 4},
		Conditions: []metav1.Condition{{Type: datav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonSynced}},
	}}
	var out bytes.Buffer
	if err := o.printStatus(&out, []datav1alpha1.Dataset{ds}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "copies 2/3 (current 4)") {
		t.Errorf("status of a Dataset with copies:\n%s", out.String())
	}
}
