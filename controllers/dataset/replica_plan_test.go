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
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

var planNow = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)

func testNode(name string, ready bool, since time.Duration, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	l := map[string]string{corev1.LabelHostname: name}
	maps.Copy(l, labels)
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
			LastTransitionTime: metav1.Time{Time: planNow.Add(-since)}}}}}
}

// testReplica is node's copy holding generation g (0: nothing yet), served at an endpoint named
// after the node, copying spec generation from peer.
func testReplica(node string, g int64, specGen int64, peer string) datav1alpha1.DatasetReplica {
	r := datav1alpha1.DatasetReplica{Spec: datav1alpha1.DatasetReplicaSpec{NodeName: node, Generation: specGen, Peer: peer},
		Status: datav1alpha1.DatasetReplicaStatus{Generation: g, Endpoint: "http://" + node}}
	if g > 0 {
		r.Status.Conditions = []metav1.Condition{{Type: datav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonSynced}}
	}
	return r
}

func TestPlanReplicasChoosesNodes(t *testing.T) {
	cache := map[string]string{"cache": "yes"}
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	nodes := []corev1.Node{
		testNode("c", true, time.Hour, cache), testNode("a", true, time.Hour, cache), testNode("b", true, time.Hour, nil),
		testNode("d", true, time.Hour, cache, taint), testNode("e", false, time.Minute, cache), testNode("f", false, time.Hour, cache),
	}
	tests := []struct {
		name     string
		policy   datav1alpha1.ReplicaPolicy
		replicas []datav1alpha1.DatasetReplica
		want     []string
		matching int
	}{
		{name: "every node but the tainted one and the one lost past the grace period", want: []string{"a", "b", "c", "e"}, matching: 4},
		{name: "selector", policy: datav1alpha1.ReplicaPolicy{NodeSelector: cache}, want: []string{"a", "c", "e"}, matching: 3},
		{name: "a toleration admits the tainted node", policy: datav1alpha1.ReplicaPolicy{NodeSelector: cache,
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
			want: []string{"a", "c", "d", "e"}, matching: 4},
		{name: "node affinity", policy: datav1alpha1.ReplicaPolicy{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "c"}}}}}}},
			want: []string{"a", "c"}, matching: 2},
		{name: "maxReplicas takes the first by name", policy: datav1alpha1.ReplicaPolicy{MaxReplicas: ptr.To[int32](2)}, want: []string{"a", "b"}, matching: 4},
		{name: "maxReplicas keeps nodes that have a copy", policy: datav1alpha1.ReplicaPolicy{MaxReplicas: ptr.To[int32](2)},
			replicas: []datav1alpha1.DatasetReplica{testReplica("e", 3, 0, "")}, want: []string{"a", "e"}, matching: 4},
		{name: "a copy on a node that stopped matching goes", policy: datav1alpha1.ReplicaPolicy{NodeSelector: cache},
			replicas: []datav1alpha1.DatasetReplica{testReplica("b", 3, 0, "")}, want: []string{"a", "c", "e"}, matching: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planReplicas(&tt.policy, nodes, tt.replicas, nil, "", planNow)
			if !slices.Equal(p.chosen, tt.want) || p.matching != tt.matching {
				t.Errorf("chosen %v of %d matching, want %v of %d", p.chosen, p.matching, tt.want, tt.matching)
			}
		})
	}
}

func TestPlanReplicasSeedAndReadiness(t *testing.T) {
	nodes := []corev1.Node{testNode("a", true, time.Hour, nil), testNode("b", false, time.Minute, nil), testNode("c", true, time.Hour, nil)}
	replicas := []datav1alpha1.DatasetReplica{testReplica("a", 4, 4, "http://b"), testReplica("b", 5, 0, ""), testReplica("c", 5, 5, "http://b")}
	p := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "b", planNow)
	if p.highest != 5 {
		t.Errorf("highest generation %d, want 5", p.highest)
	}
	if p.seed != "c" || p.generation != 5 {
		t.Fatalf("seed %q at %d; want c, the Ready copy with the newest generation, when the seed's node is NotReady", p.seed, p.generation)
	}
	want := []datav1alpha1.ReplicaNodeStatus{
		{Node: "a", Generation: 4, Reason: datav1alpha1.ReasonCopying},
		{Node: "b", Generation: 5, Reason: datav1alpha1.ReasonNodeNotReady},
		{Node: "c", Generation: 5, Ready: true},
	}
	if !slices.Equal(p.nodes, want) || p.ready != 1 {
		t.Errorf("nodes %+v (ready %d), want %+v", p.nodes, p.ready, want)
	}
	if p.peers["a"] != "http://c" {
		t.Errorf("a copies from %q, want the new seed", p.peers["a"])
	}
	if again := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "c", planNow); again.seed != "c" {
		t.Errorf("the seed moved to %q although its node is Ready", again.seed)
	}
}

// TestCopiesWithoutAgentAreNotReady: a copy whose node runs no Ready agent is reported NoAgent and
// not counted ready; a NotReady node keeps its own reason; the seed and the peers do not move; with the
// agents unknown (nil) nothing changes.
func TestCopiesWithoutAgentAreNotReady(t *testing.T) {
	nodes := []corev1.Node{testNode("a", true, time.Hour, nil), testNode("b", true, time.Hour, nil), testNode("c", false, time.Minute, nil)}
	replicas := []datav1alpha1.DatasetReplica{testReplica("a", 5, 0, ""), testReplica("b", 5, 5, "http://a"), testReplica("c", 4, 4, "")}
	unknown := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "a", planNow)
	if unknown.ready != 2 || unknown.nodes[0].Reason != "" {
		t.Fatalf("with the agents unknown: ready %d, nodes %+v; want a and b ready", unknown.ready, unknown.nodes)
	}
	p := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, map[string]bool{"b": true}, "a", planNow)
	want := []datav1alpha1.ReplicaNodeStatus{
		{Node: "a", Generation: 5, Reason: datav1alpha1.ReasonNoAgent},
		{Node: "b", Generation: 5, Ready: true},
		{Node: "c", Generation: 4, Reason: datav1alpha1.ReasonNodeNotReady},
	}
	if !slices.Equal(p.nodes, want) || p.ready != 1 {
		t.Errorf("nodes %+v (ready %d), want %+v (ready 1)", p.nodes, p.ready, want)
	}
	if p.seed != unknown.seed || !maps.Equal(p.peers, unknown.peers) {
		t.Errorf("seed %q peers %v moved from %q %v", p.seed, p.peers, unknown.seed, unknown.peers)
	}
}

// TestPlanReplicasFansOut: each source serves at most peerFanout followers; a follower that got
// the generation becomes a source for the next round.
func TestPlanReplicasFansOut(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	var nodes []corev1.Node
	replicas := []datav1alpha1.DatasetReplica{testReplica("a", 9, 0, "")}
	for _, n := range names {
		nodes = append(nodes, testNode(n, true, time.Hour, nil))
		if n != "a" {
			replicas = append(replicas, testReplica(n, 0, 0, ""))
		}
	}
	p := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "a", planNow)
	if len(p.peers) != peerFanout || p.peers["b"] != "http://a" || p.peers["c"] != "http://a" {
		t.Fatalf("first round: %v, want b and c from the seed", p.peers)
	}
	// b and c got generation 9 and serve; d..g copy from a, b and c, at most two each.
	replicas[1], replicas[2] = testReplica("b", 9, 9, "http://a"), testReplica("c", 9, 9, "http://a")
	p = planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "a", planNow)
	load := map[string]int{}
	for _, src := range p.peers {
		load[src]++
	}
	if len(p.peers) != 4 || load["http://a"] > peerFanout || load["http://b"] > peerFanout || load["http://c"] > peerFanout {
		t.Errorf("second round: %v", p.peers)
	}
	// A follower keeps the source it copies from.
	replicas[3] = testReplica("d", 0, 9, "http://c")
	if p = planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "a", planNow); p.peers["d"] != "http://c" {
		t.Errorf("d moved from its source c to %q", p.peers["d"])
	}
}

// TestNodePlacementChanged: a kubelet's heartbeat wakes no Dataset; a label, a taint or a change of
// readiness does.
func TestNodePlacementChanged(t *testing.T) {
	base := testNode("a", true, time.Hour, map[string]string{"pool": "x"})
	heartbeat := *base.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(planNow)
	relabelled := *base.DeepCopy()
	relabelled.Labels["pool"] = "y"
	tainted := *base.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	stopped := testNode("a", false, 0, map[string]string{"pool": "x"})
	for _, tt := range []struct {
		name string
		cur  corev1.Node
		want bool
	}{{"heartbeat", heartbeat, false}, {"label", relabelled, true}, {"taint", tainted, true}, {"NotReady", stopped, true}} {
		if got := nodePlacementChanged.Update(event.UpdateEvent{ObjectOld: &base, ObjectNew: &tt.cur}); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFollowersAreGivenTheSeedsDigest: the digest followers check their peers against is the one the
// seed published with its generation, never a follower's, even a follower that serves as a peer.
func TestFollowersAreGivenTheSeedsDigest(t *testing.T) {
	nodes := []corev1.Node{testNode("a", true, time.Hour, nil), testNode("b", true, time.Hour, nil), testNode("c", true, time.Hour, nil)}
	replicas := []datav1alpha1.DatasetReplica{testReplica("a", 5, 0, ""), testReplica("b", 5, 5, "http://a"), testReplica("c", 4, 4, "http://a")}
	replicas[0].Status.ManifestDigest = "sha256:seed"
	replicas[1].Status.ManifestDigest = "sha256:forged"
	p := planReplicas(&datav1alpha1.ReplicaPolicy{}, nodes, replicas, nil, "a", planNow)
	if p.seed != "a" || p.generation != 5 || p.digest != "sha256:seed" {
		t.Errorf("seed %q at %d with digest %q; want a at 5 with the seed's digest", p.seed, p.generation, p.digest)
	}
}
