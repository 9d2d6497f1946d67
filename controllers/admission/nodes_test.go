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

package admission

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func benchKeyOf(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: "run/" + name}
}

// admitAll asks for each key in turn, as reconciles would, and returns those admitted. placedNow
// says whether each admitted Job's pod gets a node before the next question.
func admitAll(a *Queue, keys []string, w NodeWant, use map[string]NodeUse, perNode int, placedNow bool, now time.Time) []string {
	var got []string
	for _, k := range keys {
		if ok, _ := a.AdmitOnNode(benchKeyOf(k), w, use, perNode, 0, now); ok {
			got = append(got, k)
			if placedNow {
				a.Placed(benchKeyOf(k))
			}
		}
	}
	return got
}

func TestAdmitOnNode(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	one := NodeWant{Nodes: []string{"node-a"}}
	two := NodeWant{Nodes: []string{"node-a", "node-b"}}
	for _, tc := range []struct {
		name    string
		want    NodeWant
		use     map[string]NodeUse
		perNode int
		placed  bool
		admit   []string
	}{
		{name: "cap 1: two Jobs for one node, one at a time", want: one, perNode: 1, placed: true, admit: []string{"j1"}},
		{name: "cap 0: both at once", want: one, perNode: 0, placed: true, admit: []string{"j1", "j2"}},
		{name: "cap 1, two nodes: one each", want: two, perNode: 1, placed: true, admit: []string{"j1", "j2"}},
		{name: "cap 1, two nodes, the first not placed yet: the second waits for it", want: two, perNode: 1, placed: false, admit: []string{"j1"}},
		{name: "a node already running a bench pod", want: one, perNode: 1, placed: true, use: map[string]NodeUse{"node-a": {Bench: 1}}},
		{name: "cap 2 leaves room for one more", want: one, perNode: 2, placed: true, use: map[string]NodeUse{"node-a": {Bench: 1}}, admit: []string{"j1"}},
		{name: "an exclusive run holds the node even without a cap", want: one, perNode: 0, placed: true, use: map[string]NodeUse{"node-a": {Bench: 1, ExclusiveRun: "ns/x"}}},
		{name: "an exclusive Job waits for a node without pqcache pods", want: NodeWant{Nodes: []string{"node-a"}, Exclusive: true}, perNode: 0, placed: true, use: map[string]NodeUse{"node-a": {Others: 1}}},
		{name: "an exclusive Job takes its node alone", want: NodeWant{Nodes: []string{"node-a"}, Exclusive: true}, perNode: 3, placed: true, admit: []string{"j1"}},
		{name: "no node known: not held for a node", want: NodeWant{}, perNode: 1, placed: true, admit: []string{"j1", "j2"}},
		{name: "no node known: not held for a placement either", want: NodeWant{}, perNode: 1, placed: false, admit: []string{"j1", "j2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewQueue(0)
			use := tc.use
			if use == nil {
				use = map[string]NodeUse{}
			}
			got := []string{}
			// Placement is what the controller sees of pods: count the admitted ones on the node the
			// scheduler would pick (one the Job was not told to avoid).
			for _, k := range []string{"j1", "j2"} {
				ok, avoid := a.AdmitOnNode(benchKeyOf(k), tc.want, use, tc.perNode, 0, now)
				if !ok {
					continue
				}
				got = append(got, k)
				if tc.placed {
					for _, n := range tc.want.Nodes {
						if !slices.Contains(avoid, n) {
							Take(use, n, tc.want)
							break
						}
					}
					a.Placed(benchKeyOf(k))
				}
			}
			if diff := cmp.Diff(append([]string{}, tc.admit...), got); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
		})
	}
}

// The longest-waiting Job goes first on the node it waits for, but one that waits for a busy node
// does not hold back a younger one that fits elsewhere.
func TestAdmitOnNodeOrder(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	a := NewQueue(0)
	use := map[string]NodeUse{"node-a": {Bench: 1}}
	onA, onB := NodeWant{Nodes: []string{"node-a"}}, NodeWant{Nodes: []string{"node-b"}}
	if ok, _ := a.AdmitOnNode(benchKeyOf("old"), onA, use, 1, 0, now); ok {
		t.Fatal("node-a is full, yet the old Job was admitted")
	}
	if ok, _ := a.AdmitOnNode(benchKeyOf("young-b"), onB, use, 1, 0, now.Add(time.Second)); !ok {
		t.Fatal("a Job for the free node-b was held behind one waiting for node-a")
	}
	a.Placed(benchKeyOf("young-b"))
	if ok, _ := a.AdmitOnNode(benchKeyOf("young-a"), onA, map[string]NodeUse{"node-b": {Bench: 1}}, 1, 0, now.Add(2*time.Second)); ok {
		t.Fatal("node-a freed, and a younger Job took it before the one that waited longest")
	}
	if ok, _ := a.AdmitOnNode(benchKeyOf("old"), onA, map[string]NodeUse{"node-b": {Bench: 1}}, 1, 0, now.Add(3*time.Second)); !ok {
		t.Fatal("node-a freed, and the Job that waited longest for it was not admitted")
	}
	// The cluster cap still counts: with a cap of 1 and one Job active, nothing more starts.
	c := NewQueue(1)
	if ok, _ := c.AdmitOnNode(benchKeyOf("x"), onB, nil, 1, 1, now); ok {
		t.Fatal("admitted past the cluster cap")
	}
	// Forgetting a run drops its wants and its placing Jobs, which would otherwise hold the queue.
	a.ForgetOwner(types.NamespacedName{Namespace: "ns", Name: "run"})
	if len(a.wants) != 0 || len(a.placing) != 0 || a.Len() != 0 {
		t.Fatalf("after ForgetOwner: wants %v placing %v len %d", a.wants, a.placing, a.Len())
	}
}

// A placing Job past placingGrace no longer holds the others: it waits in the scheduler.
func TestAdmitOnNodePlacingGrace(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	a := NewQueue(0)
	w := NodeWant{Nodes: []string{"node-a", "node-b"}}
	if got := admitAll(a, []string{"j1", "j2"}, w, map[string]NodeUse{}, 1, false, now); !cmp.Equal(got, []string{"j1"}) {
		t.Fatalf("admitted %v", got)
	}
	if ok, _ := a.AdmitOnNode(benchKeyOf("j2"), w, map[string]NodeUse{}, 1, 0, now.Add(PlacingGrace+time.Second)); !ok {
		t.Fatal("a Job that never got a node still holds the queue past placingGrace")
	}
}
