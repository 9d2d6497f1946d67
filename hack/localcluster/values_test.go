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

package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The cluster's chart values give each node's agent its own cache root (the nodes share this
// machine's disk: the chart's default hostPath would be one directory for all, and two of three
// agents crash-looped when the demo cluster turned them on), so `--set agent.enabled=true` just works.
func TestHelmValuesGiveEachNodeItsOwnCacheRoot(t *testing.T) {
	c := &cluster{dir: t.TempDir()}
	data, err := os.ReadFile(c.helmValues())
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Agent struct {
			CacheRoot   string `json:"cacheRoot"`
			NodeReserve string `json:"nodeReserve"`
			Enabled     *bool  `json:"enabled"`
		} `json:"agent"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Agent.CacheRoot, "/var/lib/kubelet/") {
		t.Errorf("agent.cacheRoot %q is not under kubelet's root, which each node of this cluster has of its own", v.Agent.CacheRoot)
	}
	if v.Agent.NodeReserve == "" || v.Agent.Enabled != nil {
		t.Errorf("agent: reserve %q, enabled %v: want a small reserve, and the agent left off as the chart has it", v.Agent.NodeReserve, v.Agent.Enabled)
	}
}
