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

package cli

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestPeerFlags: the peer CA and the agents' ServiceAccount are NAMESPACE/NAME; the manager's
// signer takes both flags or neither.
func TestPeerFlags(t *testing.T) {
	for in, want := range map[string]types.NamespacedName{"pqcache/pqcache-peer-ca": {Namespace: "pqcache", Name: "pqcache-peer-ca"}} {
		if got, err := namespacedName("--x", in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "name", "/name", "ns/", "ns/a/b"} {
		if _, err := namespacedName("--x", bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	base := managerOptions{syncJobTTL: time.Hour}
	if cfg, err := managerConfig(base); err != nil || cfg.PeerCA.Name != "" {
		t.Errorf("no flags: %+v %v", cfg.PeerCA, err)
	}
	withCA := base
	withCA.peerCA = "pqcache/ca"
	if _, err := managerConfig(withCA); err == nil {
		t.Error("--peer-ca without --peer-agent-service-account was taken")
	}
}
