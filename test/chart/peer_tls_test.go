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
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPeerTLS: with the agent, nothing secret is rendered for peers (no key, no certificate: the CA is
// made by the manager at run time), each agent mounts its own token for the peers' audience only,
// and the agent and the manager hold exactly the grants templates/peer-tls.yaml explains.
func TestPeerTLS(t *testing.T) {
	r := render(t, "agent.enabled=true", "locality.webhook.enabled=false")
	for _, s := range r.all("Secret") {
		t.Errorf("Secret %s is rendered (keys %v): nothing secret may be in the rendered chart", s.GetName(), keys(s))
	}
	// With the locality webhook, its certificate is the one Secret rendered (not a peer's).
	for _, s := range render(t, "agent.enabled=true").all("Secret") {
		if s.GetName() != "pq-pqcache-webhook-cert" {
			t.Errorf("Secret %s is rendered (keys %v)", s.GetName(), keys(s))
		}
	}
	ds := r.one(t, "DaemonSet").Object
	pod, _, _ := unstructured.NestedMap(ds, "spec", "template", "spec")
	c := pod["containers"].([]any)[0].(map[string]any)
	if _, found := c["envFrom"]; found {
		t.Errorf("the agent takes environment from %v", c["envFrom"])
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"--peer-token-file=/var/run/secrets/pqcache/peer/token",
		"--peer-ca-configmap=pqcache-system/pq-pqcache-peer-ca", "--peer-service-account=pqcache-system/pq-pqcache-agent"} {
		if !hasArg(args, want) {
			t.Errorf("agent args %v lack %q", args, want)
		}
	}
	vols, _, _ := unstructured.NestedSlice(pod, "volumes")
	var token map[string]any
	for _, v := range vols {
		if v.(map[string]any)["name"] == "peer-token" {
			srcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
			token, _, _ = unstructured.NestedMap(srcs[0].(map[string]any), "serviceAccountToken")
		}
	}
	if want := "map[audience:pqcache-peer expirationSeconds:600 path:token]"; fmt.Sprint(token) != want {
		t.Errorf("peer token volume %v, want %v", token, want)
	}
	margs := r.managerArgs(t)
	for _, want := range []string{"--peer-ca=pqcache-system/pq-pqcache-peer-ca", "--peer-agent-service-account=pqcache-system/pq-pqcache-agent"} {
		if !hasArg(margs, want) {
			t.Errorf("manager args %v lack %q", margs, want)
		}
	}
	checkPeerRules(t, r)
	for _, cr := range render(t).all("ClusterRole") {
		if strings.Contains(cr.GetName(), "peer") {
			t.Errorf("ClusterRole %s without the agent", cr.GetName())
		}
	}
}

func checkPeerRules(t *testing.T, r rendered) {
	t.Helper()
	want := map[string][]any{
		"ClusterRole/pq-pqcache-agent-peer": {
			rule("authentication.k8s.io", "tokenreviews", nil, "create"),
			rule("certificates.k8s.io", "certificatesigningrequests", nil, "create", "get"),
		},
		"Role/pq-pqcache-agent-peer-ca": {rule("", "configmaps", []any{"pq-pqcache-peer-ca"}, "get")},
		"ClusterRole/pq-pqcache-peer-signer": {
			rule("certificates.k8s.io", "certificatesigningrequests", nil, "get", "list", "watch"),
			map[string]any{"apiGroups": []any{"certificates.k8s.io"}, "resources": []any{"certificatesigningrequests/approval", "certificatesigningrequests/status"}, "verbs": []any{"update"}},
			rule("certificates.k8s.io", "signers", []any{"pqcache.dev/peer"}, "approve", "sign"),
		},
		"Role/pq-pqcache-peer-ca": {
			rule("", "secrets", []any{"pq-pqcache-peer-ca"}, "get"),
			rule("", "configmaps", []any{"pq-pqcache-peer-ca"}, "get", "update"),
			map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets", "configmaps"}, "verbs": []any{"create"}},
			rule("", "pods", nil, "get"),
		},
	}
	for name, rules := range want {
		kind, n, _ := strings.Cut(name, "/")
		if got := r.named(t, kind, n).Object["rules"]; !reflect.DeepEqual(got, rules) {
			t.Errorf("%s rules %v, want %v", name, got, rules)
		}
	}
}

func rule(group, resource string, names []any, verbs ...string) map[string]any {
	v := make([]any, len(verbs))
	for i, s := range verbs {
		v[i] = s
	}
	m := map[string]any{"apiGroups": []any{group}, "resources": []any{resource}, "verbs": v}
	if names != nil {
		m["resourceNames"] = names
	}
	return m
}

func keys(u *unstructured.Unstructured) []string {
	var out []string
	for _, f := range []string{"data", "stringData"} {
		m, _, _ := unstructured.NestedMap(u.Object, f)
		for k := range m {
			out = append(out, f+"."+k)
		}
	}
	return out
}
