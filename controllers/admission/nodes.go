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
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Two bench Jobs on one node moved each other's results by -16% to +38% (docs/benchmarks.md), so bench
// Jobs are admitted per node too: at most perNode unfinished bench pods on a node, and a node that
// runs an exclusive run's Job (spec.exclusive) runs nothing else of pqcache's but its node agent.
//
// The controller does not choose the node: it admits a Job when one of the nodes the Job can run on
// has room, and excludes the nodes without room from the Job's node affinity; the scheduler then
// places it among the rest, with everything it alone knows (free CPU and memory, the node affinity
// of a local volume, taints). A Job counts on a node once its pod is placed there. So that two Jobs
// admitted at once cannot both take the last room on one node, a Job is admitted per node only when
// every Job admitted before it has a node (placing), or placingGrace has passed: a pod the scheduler
// cannot place for that long waits in the scheduler, not in front of everyone else. Without a cap per
// node, only the exclusive runs' Jobs are counted so; the others only keep off exclusive nodes.

// PlacingGrace is how long an admitted bench Job without a node holds the per-node admission of the
// others.
const PlacingGrace = 30 * time.Second

// NodeWant is where one bench Job may run: the nodes it fits on by what the controller knows (the
// nodes holding its pinned generation, or the nodes its selector, taints and cordons allow), and
// whether it wants its node to itself. No nodes means none is known: the Job is not held for a node,
// and the scheduler says why it cannot place it.
type NodeWant struct {
	Nodes     []string
	Exclusive bool
}

// NodeUse is what pqcache runs on one node: unfinished bench pods, other worker pods (sync), and
// which exclusive run holds it, if one does ("namespace/run").
type NodeUse struct {
	Bench, Others int
	ExclusiveRun  string
}

// roomFor says whether a Job that wants w may start on a node used as u under perNode (0: no cap).
func roomFor(u NodeUse, w NodeWant, perNode int) bool {
	switch {
	case u.ExclusiveRun != "":
		return false
	case w.Exclusive:
		return u.Bench == 0 && u.Others == 0
	default:
		return perNode <= 0 || u.Bench < perNode
	}
}

// PickNode is the node among w's with room and the fewest bench pods (then by name), and whether there
// is one. A want with no known node always fits, on no particular node ("").
func PickNode(w NodeWant, use map[string]NodeUse, perNode int) (string, bool) {
	if len(w.Nodes) == 0 {
		return "", true
	}
	best, found := "", false
	for _, n := range w.Nodes {
		if !roomFor(use[n], w, perNode) {
			continue
		}
		if !found || use[n].Bench < use[best].Bench || (use[n].Bench == use[best].Bench && n < best) {
			best, found = n, true
		}
	}
	return best, found
}

// Take counts one more Job of want w on node n.
func Take(use map[string]NodeUse, n string, w NodeWant) {
	if n == "" {
		return
	}
	u := use[n]
	u.Bench++
	if w.Exclusive {
		u.ExclusiveRun = "(admitted)"
	}
	use[n] = u
}

// fullFor are the nodes of w that have no room for it, sorted: the Job's node affinity excludes them.
func fullFor(w NodeWant, use map[string]NodeUse, perNode int) []string {
	var full []string
	for _, n := range w.Nodes {
		if !roomFor(use[n], w, perNode) {
			full = append(full, n)
		}
	}
	slices.Sort(full)
	return full
}

// AdmitOnNode is Admit for a bench Job that also needs room on a node. The waiting keys are served
// oldest first, each on a node it fits on as use stands after the older ones took theirs; a key that
// fits nowhere keeps its place for when its node frees, without holding back younger keys that fit
// elsewhere. The cluster cap (a.limit, 0: none) counts as in Admit. Admitted, it returns the nodes the
// Job must avoid: those of its nodes left without room once the older keys are served.
func (a *Queue) AdmitOnNode(key types.NamespacedName, w NodeWant, use map[string]NodeUse, perNode, active int, now time.Time) (bool, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[key]; !ok {
		a.waiting[key] = now
	}
	a.wants[key] = w
	for _, m := range []map[types.NamespacedName]time.Time{a.started, a.placing} {
		for k, at := range m {
			if now.Sub(at) > max(StartedGrace, PlacingGrace) {
				delete(m, k)
			}
		}
	}
	// Counting matters under a cap per node, and for an exclusive Job, which needs a node with none.
	counted := perNode > 0 || w.Exclusive
	if counted && len(w.Nodes) > 0 && len(a.placing) > 0 {
		return false, nil // an admitted Job has no node yet: the room it will take is unknown
	}
	capped, free := a.limit > 0, a.limit-active-len(a.started)
	if capped && free <= 0 {
		return false, nil
	}
	sim := make(map[string]NodeUse, len(use))
	for n, u := range use {
		sim[n] = u
	}
	for _, k := range a.oldestFirst() {
		if capped && free <= 0 {
			return false, nil
		}
		kw := a.wants[k]
		n, ok := PickNode(kw, sim, perNode)
		if !ok {
			continue
		}
		if k == key {
			delete(a.waiting, key)
			delete(a.wants, key)
			a.started[key] = now
			if counted && len(w.Nodes) > 0 {
				a.placing[key] = now
			}
			return true, fullFor(w, sim, perNode)
		}
		Take(sim, n, kw)
		free--
	}
	return false, nil
}

// Placed tells the admission that key's pod has a node: the next Job may be admitted per node.
func (a *Queue) Placed(key types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.placing, key)
}

// Placing says whether some admitted Job waits for its pod to get a node: a placement, which no Job
// event announces, will then release the queue.
func (a *Queue) Placing() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.placing) > 0
}

// oldestFirst are the waiting keys, the longest-waiting first (then by name). a.mu must be held.
func (a *Queue) oldestFirst() []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(a.waiting))
	for k := range a.waiting {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y types.NamespacedName) int {
		if c := a.waiting[x].Compare(a.waiting[y]); c != 0 {
			return c
		}
		return cmp.Compare(x.String(), y.String())
	})
	return keys
}
