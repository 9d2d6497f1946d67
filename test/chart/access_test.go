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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// agentArgs is the agent container's command line.
func (r rendered) agentArgs(t *testing.T) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(r.one(t, "DaemonSet").Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

// TestAccessPolicy: by default no namespace may use pqcache's own identity, and link-local and the
// cluster's own ranges are denied as endpoints, to the manager and the agent alike; the values set
// both, allowedCIDRs reopens a range (an in-cluster S3 server), and a value that is not a range is
// refused at render time.
func TestAccessPolicy(t *testing.T) {
	const deniedByDefault = "--denied-cidrs=169.254.0.0/16,fe80::/10,fd00:ec2::254/128,10.96.0.0/12,10.244.0.0/16"
	r := render(t, "agent.enabled=true")
	for who, args := range map[string][]string{"manager": r.managerArgs(t), "agent": r.agentArgs(t)} {
		if !hasArg(args, deniedByDefault) {
			t.Errorf("%s args %v lack %s", who, args, deniedByDefault)
		}
		if a := argWithPrefix(args, "--ambient-credentials-namespaces"); a != "" {
			t.Errorf("%s: %s by default, want no namespace allowed", who, a)
		}
		if a := argWithPrefix(args, "--allowed-cidrs"); a != "" {
			t.Errorf("%s: %s by default", who, a)
		}
	}
	r = render(t, "agent.enabled=true", "ambientCredentials.namespaces={analytics,ml}", "endpoints.serviceCIDRs={10.0.0.0/16}",
		"endpoints.podCIDRs=null", "endpoints.allowedCIDRs={10.0.3.7/32}")
	for who, args := range map[string][]string{"manager": r.managerArgs(t), "agent": r.agentArgs(t)} {
		for _, want := range []string{"--ambient-credentials-namespaces=analytics,ml",
			"--denied-cidrs=169.254.0.0/16,fe80::/10,fd00:ec2::254/128,10.0.0.0/16", "--allowed-cidrs=10.0.3.7/32"} {
			if !hasArg(args, want) {
				t.Errorf("%s args %v lack %s", who, args, want)
			}
		}
	}
	if _, err := helm(t, "template", "pq", chartDir, "--set", "endpoints.allowedCIDRs={versitygw.svc}"); err == nil || !strings.Contains(err.Error(), "/endpoints/allowedCIDRs") {
		t.Errorf("endpoints.allowedCIDRs={versitygw.svc}: %v, want the schema to refuse it", err)
	}
}
