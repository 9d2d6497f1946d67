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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// A run over per-node copies whose pinned generation no node holds waits, and says why.
func TestRunWaitsForANodeHoldingItsGeneration(t *testing.T) {
	ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Name: "lake"}, Spec: datav1alpha1.DatasetSpec{Replicas: &datav1alpha1.ReplicaPolicy{}},
		Status: datav1alpha1.DatasetStatus{Replicas: &datav1alpha1.ReplicasStatus{Nodes: []datav1alpha1.ReplicaNodeStatus{
			{Node: "node-2", Generation: 5, Ready: true}, {Node: "node-1", Generation: 4}}}}}
	run := &datav1alpha1.BenchRun{Status: datav1alpha1.BenchRunStatus{DatasetGeneration: 4, StartTime: &metav1.Time{}}}
	volume := datav1alpha1.BenchInput{Type: datav1alpha1.InputVolume}
	if why := generationHeldNowhere(run, ds, volume); why != "" {
		t.Fatalf("node-1 holds generation 4, yet: %s", why)
	}
	if got := nodesHolding(ds, 4); len(got) != 1 || got[0] != "node-1" {
		t.Fatalf("nodesHolding(4) = %v", got)
	}
	run.Status.DatasetGeneration = 3
	why := generationHeldNowhere(run, ds, volume)
	if !strings.Contains(why, "no node holds generation 3") {
		t.Fatalf("why = %q", why)
	}
	if generationHeldNowhere(run, ds, datav1alpha1.BenchInput{Type: datav1alpha1.InputS3}) != "" {
		t.Fatal("an s3 input waits for copies it does not read")
	}

	views := []jobView{{plan: benchJob{input: volume}, phase: jobQueued, waitFor: why}, {plan: benchJob{input: volume}, phase: jobQueued}}
	s := summarizeRun(run, views, 0, false)
	applyRunSummary(run, s, metav1.Now().Time)
	c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded)
	if c == nil || c.Reason != datav1alpha1.ReasonGenerationNotHeld || !strings.Contains(c.Message, "1 waiting for a slot") ||
		!strings.Contains(c.Message, "1 waiting until spec.timeout: no node holds generation 3") {
		t.Fatalf("condition %+v", c)
	}
}
