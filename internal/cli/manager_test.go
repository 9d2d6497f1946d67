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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// TestAgentPodsFlags: --agent-namespace and --agent-selector come together, and a selector that
// would take every pod of the namespace for an agent is refused.
func TestAgentPodsFlags(t *testing.T) {
	if a, err := agentPods(managerOptions{}); a != nil || err != nil {
		t.Errorf("neither flag: %v, %v; want no agents looked for", a, err)
	}
	a, err := agentPods(managerOptions{agentNamespace: "pqcache-system", agentSelector: "app.kubernetes.io/component=agent"})
	if err != nil || a.Namespace != "pqcache-system" || !a.Selector.Matches(labels.Set{"app.kubernetes.io/component": "agent"}) ||
		a.Selector.Matches(labels.Set{"app.kubernetes.io/component": "manager"}) {
		t.Errorf("both flags: %+v, %v", a, err)
	}
	for _, bad := range []managerOptions{
		{agentNamespace: "pqcache-system"},
		{agentSelector: "app=agent"},
		{agentNamespace: "pqcache-system", agentSelector: "app in (agent"},
		{agentNamespace: "pqcache-system", agentSelector: ","},
	} {
		if _, err := agentPods(bad); err == nil || !strings.Contains(err.Error(), "--agent-") {
			t.Errorf("%+v: error %v, want one naming the flag", bad, err)
		}
	}
}

// TestAgentAccountFlag: --agent-service-account names an account in --agent-namespace, and without
// that namespace it is refused rather than granting Secrets to an account in no namespace.
func TestAgentAccountFlag(t *testing.T) {
	if a, err := agentAccount(managerOptions{agentNamespace: "pqcache-system"}); a.Name != "" || err != nil {
		t.Errorf("no account: %v, %v; want no grants", a, err)
	}
	a, err := agentAccount(managerOptions{agentNamespace: "pqcache-system", agentServiceAccount: "pq-pqcache-agent"})
	if err != nil || a.Namespace != "pqcache-system" || a.Name != "pq-pqcache-agent" {
		t.Errorf("both flags: %v, %v", a, err)
	}
	if _, err := agentAccount(managerOptions{agentServiceAccount: "pq-pqcache-agent"}); err == nil || !strings.Contains(err.Error(), "--agent-namespace") {
		t.Errorf("no namespace: %v, want an error naming --agent-namespace", err)
	}
}
