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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// peerFanout is how many followers one copy serves at once (the agents' peer.DefaultMaxClients):
// filling N nodes takes about log base (1+peerFanout) of N rounds.
const peerFanout = 2

// nodeLossGrace is how long a node may be NotReady before its copy is given up: a node rebooting
// or briefly cut off keeps its copy; a node gone for good loses it.
const nodeLossGrace = 10 * time.Minute

// replicaPlan is what the Dataset's copies should be: which nodes keep one, which node is the seed,
// where each follower copies from, and which copies count as ready. It is a pure function of the
// policy, the nodes and the DatasetReplicas (planReplicas).
type replicaPlan struct {
	matching int
	// chosen are the nodes that keep a copy, in name order.
	chosen []string
	// seed syncs from the bucket; "" while no chosen node is Ready.
	seed string
	// generation is the seed's published generation: what every copy converges to.
	generation int64
	// digest is the manifest digest the seed published for generation: what followers check their
	// peers against.
	digest string
	// highest is the newest generation any copy holds, which the seed must number above.
	highest int64
	// peers maps a follower's node to the agent endpoint it copies from; a follower absent from it
	// waits for a free source.
	peers map[string]string
	// nodes are the per-node statuses, in name order.
	nodes []datav1alpha1.ReplicaNodeStatus
	ready int32
}

// planReplicas decides the copies. Existing copies on matching nodes stay (their data is there),
// new ones go to the first matching nodes by name up to maxReplicas. The seed stays the seed while
// its node is Ready; otherwise the Ready copy with the newest generation takes over. Each source (the
// seed, then followers that hold the current generation) serves at most peerFanout followers.
//
// agents are the nodes running a Ready agent (nil: unknown). A copy on a node without one is reported
// NoAgent and not ready, but the seed and the peers do not follow the agents: agents restarting for an
// upgrade neither move a seed nor cost a listing of the bucket.
func planReplicas(policy *datav1alpha1.ReplicaPolicy, nodes []corev1.Node, replicas []datav1alpha1.DatasetReplica, agents map[string]bool, prevSeed string, now time.Time) replicaPlan {
	var p replicaPlan
	byNode := map[string]*datav1alpha1.DatasetReplica{}
	for i := range replicas {
		byNode[replicas[i].Spec.NodeName] = &replicas[i]
	}
	readyNode := map[string]bool{}
	var candidates []string
	for i := range nodes {
		n := &nodes[i]
		if !nodeMatches(policy, n, now) {
			continue
		}
		candidates = append(candidates, n.Name)
		readyNode[n.Name] = nodeReady(n)
	}
	p.matching = len(candidates)
	p.chosen = chooseNodes(candidates, byNode, policy.MaxReplicas)
	p.seed = chooseSeed(p.chosen, byNode, readyNode, prevSeed)
	if r := byNode[p.seed]; r != nil {
		p.generation, p.digest = r.Status.Generation, r.Status.ManifestDigest
	}
	p.peers = assignPeers(p.chosen, p.seed, p.generation, byNode, readyNode)
	for _, r := range replicas {
		p.highest = max(p.highest, r.Status.Generation)
	}
	for _, n := range p.chosen {
		st := replicaNodeStatus(n, byNode[n], readyNode[n], agents == nil || agents[n], p.generation)
		if st.Ready {
			p.ready++
		}
		p.nodes = append(p.nodes, st)
	}
	return p
}

// nodeMatches says whether node n may keep a copy: it matches the selector, its NoSchedule and
// NoExecute taints are tolerated, it is not being deleted, and it has not been NotReady for longer
// than nodeLossGrace.
func nodeMatches(policy *datav1alpha1.ReplicaPolicy, n *corev1.Node, now time.Time) bool {
	if !n.DeletionTimestamp.IsZero() || !labels.SelectorFromSet(policy.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	if policy.NodeAffinity != nil {
		// Terms the API server let through but that do not parse match no node, as for a pod.
		if ok, err := nodeaffinity.NewLazyErrorNodeSelector(policy.NodeAffinity).Match(n); err != nil || !ok {
			return false
		}
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			continue // the node's own condition taints: readiness below decides
		}
		if !slices.ContainsFunc(policy.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, false) }) {
			return false
		}
	}
	if c := nodeCondition(n, corev1.NodeReady); c != nil && c.Status != corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) > nodeLossGrace {
		return false
	}
	return true
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodePlacementChanged passes the node events that can change which nodes keep copies, or which
// count as ready: a node created or deleted, its labels, taints or Ready status changed.
var nodePlacementChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*corev1.Node)
	cur, okNew := e.ObjectNew.(*corev1.Node)
	if !okOld || !okNew {
		return true
	}
	return !maps.Equal(old.Labels, cur.Labels) || !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		nodeReady(old) != nodeReady(cur) || !cur.DeletionTimestamp.IsZero()
}}

func nodeReady(n *corev1.Node) bool {
	c := nodeCondition(n, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// chooseNodes keeps the candidates that have a copy, then adds others in name order, up to
// maxReplicas (no bound when nil).
func chooseNodes(candidates []string, byNode map[string]*datav1alpha1.DatasetReplica, maxReplicas *int32) []string {
	slices.Sort(candidates)
	var have, add []string
	for _, n := range candidates {
		if byNode[n] != nil {
			have = append(have, n)
		} else {
			add = append(add, n)
		}
	}
	chosen := append(have, add...)
	if maxReplicas != nil && int(*maxReplicas) < len(chosen) {
		chosen = chosen[:*maxReplicas]
	}
	slices.Sort(chosen)
	return chosen
}

// chooseSeed keeps prevSeed while its node is chosen and Ready; otherwise it takes the Ready copy
// with the newest generation (the least to copy again), then the first Ready node.
func chooseSeed(chosen []string, byNode map[string]*datav1alpha1.DatasetReplica, readyNode map[string]bool, prevSeed string) string {
	if slices.Contains(chosen, prevSeed) && readyNode[prevSeed] {
		return prevSeed
	}
	best, bestGen := "", int64(-1)
	for _, n := range chosen {
		if !readyNode[n] {
			continue
		}
		var g int64
		if r := byNode[n]; r != nil {
			g = r.Status.Generation
		}
		if g > bestGen {
			best, bestGen = n, g
		}
	}
	if best == "" && slices.Contains(chosen, prevSeed) {
		return prevSeed // no node is Ready: keep the seed until one is
	}
	return best
}

// assignPeers gives each follower that lacks generation g a source with a free slot: the seed, then
// followers on Ready nodes that hold g. A follower keeps the source it copies from while that source
// still serves.
func assignPeers(chosen []string, seed string, g int64, byNode map[string]*datav1alpha1.DatasetReplica, readyNode map[string]bool) map[string]string {
	peers := map[string]string{}
	if g == 0 {
		return peers
	}
	load := map[string]int{}
	var sources []string // nodes by priority: the seed first
	endpoint := map[string]string{}
	for _, n := range append([]string{seed}, chosen...) {
		r := byNode[n]
		if r == nil || !readyNode[n] || r.Status.Endpoint == "" || r.Status.Generation != g || slices.Contains(sources, n) {
			continue
		}
		sources = append(sources, n)
		endpoint[r.Status.Endpoint] = n
	}
	var waiting []string
	for _, n := range chosen {
		r := byNode[n]
		if n == seed || r != nil && r.Status.Generation == g {
			continue
		}
		if r != nil && r.Spec.Generation == g {
			if src, ok := endpoint[r.Spec.Peer]; ok && load[src] < peerFanout {
				peers[n] = r.Spec.Peer
				load[src]++
				continue
			}
		}
		waiting = append(waiting, n)
	}
	for _, n := range waiting {
		for _, src := range sources {
			if load[src] < peerFanout {
				peers[n] = byNode[src].Status.Endpoint
				load[src]++
				break
			}
		}
	}
	return peers
}

// replicaNodeStatus is one copy's line in the Dataset's status. agentUp says a Ready agent runs on the
// node: one that reported before may be gone since (nobody keeps the copy fresh, and pods there cannot
// mount it through the CSI driver, which the agent serves).
func replicaNodeStatus(node string, r *datav1alpha1.DatasetReplica, nodeIsReady, agentUp bool, g int64) datav1alpha1.ReplicaNodeStatus {
	st := datav1alpha1.ReplicaNodeStatus{Node: node}
	switch {
	case r == nil || r.Status.Endpoint == "":
		st.Reason = datav1alpha1.ReasonNoAgent
	case !nodeIsReady:
		st.Reason = datav1alpha1.ReasonNodeNotReady
	case !agentUp:
		st.Reason = datav1alpha1.ReasonNoAgent
	}
	if r == nil {
		return st
	}
	st.Generation = r.Status.Generation
	c := meta.FindStatusCondition(r.Status.Conditions, datav1alpha1.ConditionReady)
	switch {
	case st.Reason != "":
	case c != nil && c.Status != metav1.ConditionTrue && c.Reason != datav1alpha1.ReasonSynced:
		st.Reason = c.Reason
	case g == 0 || r.Status.Generation != g:
		st.Reason = datav1alpha1.ReasonCopying
	default:
		st.Ready = true
	}
	return st
}
