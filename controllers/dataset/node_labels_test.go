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
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

func TestNodeLabels(t *testing.T) {
	long := strings.Repeat("d", 253)
	withCopies := func(ns, name string, nodes ...datav1alpha1.ReplicaNodeStatus) datav1alpha1.Dataset {
		return datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: datav1alpha1.DatasetStatus{Replicas: &datav1alpha1.ReplicasStatus{Nodes: nodes}}}
	}
	deleted := withCopies("team-a", "going", datav1alpha1.ReplicaNodeStatus{Node: "node-1", Ready: true})
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	datasets := []datav1alpha1.Dataset{
		withCopies("team-a", "events", datav1alpha1.ReplicaNodeStatus{Node: "node-1", Ready: true}, datav1alpha1.ReplicaNodeStatus{Node: "node-2", Ready: true}),
		withCopies("team-a", "filling", datav1alpha1.ReplicaNodeStatus{Node: "node-1", Ready: false}),
		withCopies("team-b", long, datav1alpha1.ReplicaNodeStatus{Node: "node-1", Ready: true}),
		deleted,
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "on-a-claim"}},
	}
	want := readyCopyLabels("node-1", datasets)
	longKey := datav1alpha1.NodeLabelKey("team-b", long)
	if len(longKey) > len(datav1alpha1.NodeLabelPrefix)+63 {
		t.Fatalf("label key %q is longer than Kubernetes admits", longKey)
	}
	if !reflect.DeepEqual(want, map[string]string{"dataset.data.pqcache.dev/team-a.events": "team-a", longKey: "team-b"}) {
		t.Fatalf("labels of node-1: %v", want)
	}

	have := map[string]string{
		"kubernetes.io/hostname":                  "node-1",
		"dataset.data.pqcache.dev/team-a.events":  "team-a", // kept
		"dataset.data.pqcache.dev/team-a.filling": "team-a", // no longer ready: removed
		"dataset.data.pqcache.dev/team-c.theirs":  "team-c", // another installation's
	}
	ours := func(ns string) bool { return ns != "team-c" }
	patch := nodeLabelPatch(have, want, ours)
	if len(patch) != 2 || patch["dataset.data.pqcache.dev/team-a.filling"] != nil || *patch[longKey] != "team-b" {
		t.Fatalf("patch %v", patch)
	}
	if _, touched := patch["dataset.data.pqcache.dev/team-c.theirs"]; touched {
		t.Fatal("removed another installation's label")
	}
	have[longKey] = "team-b"
	delete(have, "dataset.data.pqcache.dev/team-a.filling")
	if patch := nodeLabelPatch(have, want, ours); len(patch) != 0 {
		t.Fatalf("a node already labelled gets patch %v", patch)
	}
}
