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

package chart

import (
	"maps"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// policy converts the rendered NetworkPolicy name.
func (r rendered) policy(t *testing.T, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.named(t, "NetworkPolicy", name).Object, np); err != nil {
		t.Fatal(err)
	}
	return np
}

// ingressByPort maps each port a policy opens to the sources its rule allows (nil: any).
func ingressByPort(t *testing.T, np *networkingv1.NetworkPolicy) map[int32][]networkingv1.NetworkPolicyPeer {
	t.Helper()
	out := map[int32][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if _, dup := out[p.Port.IntVal]; dup {
				t.Errorf("%s: port %d in two rules", np.Name, p.Port.IntVal)
			}
			out[p.Port.IntVal] = rule.From
		}
	}
	return out
}

// podLabels is what a workload's pod template labels its pods with.
func podLabels(t *testing.T, workload *unstructured.Unstructured) map[string]string {
	t.Helper()
	labels, _, err := unstructured.NestedStringMap(workload.Object, "spec", "template", "metadata", "labels")
	if err != nil {
		t.Fatal(err)
	}
	return labels
}

// selects reports whether a non-empty match-labels selector selects pods labelled so.
func selects(selector map[string]string, podLabels map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podLabels))
}

// TestNetworkPolicies: by default the manager's pod takes connections on its probes, webhook, events
// and metrics ports only (metrics from pods of the cluster), the agents' pods on their probes and, on
// their peer port, from the other agents only; each policy selects its own pods and follows the
// ports the values set.
func TestNetworkPolicies(t *testing.T) {
	r := render(t, "agent.enabled=true")
	manager, agent := r.policy(t, "pq-pqcache-manager"), r.policy(t, "pq-pqcache-agent")
	managerPod, agentPod := podLabels(t, r.one(t, "Deployment")), podLabels(t, r.one(t, "DaemonSet"))
	if !selects(manager.Spec.PodSelector.MatchLabels, managerPod) || selects(manager.Spec.PodSelector.MatchLabels, agentPod) {
		t.Errorf("the manager's policy selects %v; the manager's pod is %v, the agents' %v", manager.Spec.PodSelector.MatchLabels, managerPod, agentPod)
	}
	if !selects(agent.Spec.PodSelector.MatchLabels, agentPod) || selects(agent.Spec.PodSelector.MatchLabels, managerPod) {
		t.Errorf("the agents' policy selects %v; the agents' pods are %v", agent.Spec.PodSelector.MatchLabels, agentPod)
	}
	for _, np := range []*networkingv1.NetworkPolicy{manager, agent} {
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("%s: policy types %v, want Ingress only (egress differs per cluster)", np.Name, np.Spec.PolicyTypes)
		}
	}

	ports := ingressByPort(t, manager)
	if got := slices.Sorted(maps.Keys(ports)); !slices.Equal(got, []int32{8080, 8081, 8082, 9443}) {
		t.Errorf("the manager's open ports %v, want metrics 8080, probes 8081, events 8082, webhook 9443", got)
	}
	if from := ports[8080]; len(from) != 1 || from[0].NamespaceSelector == nil || len(from[0].NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("metrics from %+v, want any pod of the cluster", from)
	}
	if ports[9443] != nil || ports[8082] != nil {
		t.Errorf("webhook from %+v, events from %+v: want anyone by default (the API server's and stores' addresses differ)", ports[9443], ports[8082])
	}

	peers := ingressByPort(t, agent)
	if got := slices.Sorted(maps.Keys(peers)); !slices.Equal(got, []int32{7480, 7481, 8083, 8084}) {
		t.Errorf("the agents' open ports %v, want peers 7480, readers 7481, probes 8083 and metrics 8084", got)
	}
	if from := peers[8084]; len(from) != 1 || from[0].NamespaceSelector == nil || len(from[0].NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("agents' metrics from %+v, want networkPolicy.metricsFrom (any pod of the cluster by default)", from)
	}
	if from := peers[7481]; len(from) != 1 || from[0].NamespaceSelector == nil || len(from[0].NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("readers' port from %+v, want any pod of the cluster by default (each reads its own namespace's only)", from)
	}
	if from := peers[7480]; len(from) != 1 || from[0].PodSelector == nil || from[0].NamespaceSelector != nil ||
		!selects(from[0].PodSelector.MatchLabels, agentPod) || selects(from[0].PodSelector.MatchLabels, managerPod) {
		t.Errorf("peer port from %+v, want the agents of this release only", from)
	}
}

// TestNetworkPoliciesFollowTheValues: the ports and sources the values set; no manager policy with
// hostNetwork (none applies there); none at all when turned off.
func TestNetworkPoliciesFollowTheValues(t *testing.T) {
	r := render(t, "agent.enabled=true", "events.port=9000", "metrics.enabled=false", "agent.peerPort=7999",
		"networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24", "networkPolicy.eventsFrom[0].namespaceSelector.matchLabels.store=yes")
	ports := ingressByPort(t, r.policy(t, "pq-pqcache-manager"))
	if got := slices.Sorted(maps.Keys(ports)); !slices.Equal(got, []int32{8081, 9000, 9443}) {
		t.Errorf("ports %v, want probes, events on 9000 and the webhook; no metrics", got)
	}
	if from := ports[9443]; len(from) != 1 || from[0].IPBlock == nil || from[0].IPBlock.CIDR != "10.0.0.0/24" {
		t.Errorf("webhook from %+v, want 10.0.0.0/24", from)
	}
	if from := ports[9000]; len(from) != 1 || from[0].NamespaceSelector == nil || from[0].NamespaceSelector.MatchLabels["store"] != "yes" {
		t.Errorf("events from %+v", from)
	}
	if _, ok := ingressByPort(t, r.policy(t, "pq-pqcache-agent"))[7999]; !ok {
		t.Error("the agents' policy does not follow agent.peerPort")
	}
	if got := render(t).all("NetworkPolicy"); len(got) != 1 {
		t.Errorf("without the agent: %d policies, want the manager's", len(got))
	}
	if got := render(t, "agent.enabled=true", "hostNetwork=true").all("NetworkPolicy"); len(got) != 1 || got[0].GetName() != "pq-pqcache-agent" {
		t.Errorf("with hostNetwork: %d policies, want the agents' only", len(got))
	}
	if got := render(t, "agent.enabled=true", "networkPolicy.enabled=false").all("NetworkPolicy"); len(got) != 0 {
		t.Errorf("networkPolicy.enabled=false: %d policies", len(got))
	}
}
