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

package agent

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodePrefixes: a node's pod CIDRs and its own addresses admit its pods and itself, and
// nothing of another node; a node without pod CIDRs is an error that says what to set.
func TestNodePrefixes(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.3"},
			{Type: corev1.NodeHostName, Address: "node-1"}}}}
	prefixes, err := nodePrefixes(node)
	if err != nil {
		t.Fatal(err)
	}
	contains := func(a string) bool {
		for _, p := range prefixes {
			if p.Contains(netip.MustParseAddr(a)) {
				return true
			}
		}
		return false
	}
	for addr, want := range map[string]bool{"10.244.1.17": true, "fd00:1::9": true, "172.18.0.3": true,
		"10.244.2.17": false, "172.18.0.4": false, "fd00:2::9": false} {
		if contains(addr) != want {
			t.Errorf("%s admitted: %v, want %v", addr, !want, want)
		}
	}
	node.Spec.PodCIDRs = nil
	if _, err := nodePrefixes(node); err == nil || !strings.Contains(err.Error(), "--readers-client-check=none") {
		t.Errorf("a node without pod CIDRs: %v", err)
	}
}

// TestInUseByEither: what the readers' sessions read is kept beside what pods mount, and an unknown
// first answer stays unknown (no pruning).
func TestInUseByEither(t *testing.T) {
	mounts := func() map[string]bool { return map[string]bool{"/cache/a": true} }
	sessions := func() map[string]bool { return map[string]bool{"/cache/b": true} }
	got := inUseByEither(mounts, sessions)()
	if len(got) != 2 || !got["/cache/a"] || !got["/cache/b"] {
		t.Errorf("union %v", got)
	}
	if got := inUseByEither(func() map[string]bool { return nil }, sessions)(); got != nil {
		t.Errorf("unknown mounts gave %v, want unknown", got)
	}
	if got := inUseByEither(nil, sessions)(); !got["/cache/b"] {
		t.Errorf("no mount side: %v", got)
	}
}
