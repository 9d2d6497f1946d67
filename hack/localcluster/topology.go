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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The address plan. Every address lives in a network namespace this tool creates: the cluster network
// namespace holds the bridge that links the nodes (the "switch") and the control plane; each node has
// its own namespace with one end of a veth pair on that bridge. None of them has a link to the host's
// namespace, so nothing sent to these addresses can leave the tool's namespaces.
const (
	// linkBridge is the bridge in the cluster network namespace that every node's link is plugged into.
	linkBridge = "pqcache0"
	// linkBridgeMAC is fixed (locally administered): a bridge without an address of its own takes the
	// lowest MAC of its ports and changes it as ports come and go, and peers then send to a MAC that is
	// gone until their ARP entry expires.
	linkBridgeMAC = "02:70:71:63:00:01"
	linkPrefix    = 24
	linkCIDR      = "10.250.0.0/24"
	// controlPlaneIP is the cluster namespace's address on the bridge: the API server advertises it, and
	// it is the kubernetes Service's endpoint.
	controlPlaneIP = "10.250.0.1"
	// nodeIPBase + i is node i's address on the bridge (i from 1).
	nodeIPBase = "10.250.0."
	nodeIPFrom = 10
	// clusterCIDR holds every pod; node i gets 10.244.i.0/24.
	clusterCIDR = "10.244.0.0/16"
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
	dnsIP       = "10.96.0.10"
	// podBridge is each node's CNI bridge, the pods' gateway, created with a fixed MAC for the reason
	// given at linkBridgeMAC.
	podBridge = "cni0"
	// maxNodes keeps every per-node name and address unique and short (veth names are at most 15 bytes).
	maxNodes = 8
)

// zones are the topology.kubernetes.io/zone values, given to the nodes in turn, so that spreading over
// zones can be tested on as few as two nodes.
var zones = []string{"zone-a", "zone-b"}

// node is one node of the local cluster: its own network namespace, containerd, kubelet, kube-proxy,
// cgroup subtree, volume directory and pod CIDR.
type node struct {
	Name    string `json:"name"`
	Index   int    `json:"index"`
	IP      string `json:"ip"`
	PodCIDR string `json:"podCIDR"`
	Gateway string `json:"gateway"`
	Zone    string `json:"zone"`
}

// newNode returns node i (from 1) of the address plan.
func newNode(i int) node {
	return node{
		Name:    fmt.Sprintf("node-%d", i),
		Index:   i,
		IP:      nodeIPBase + strconv.Itoa(nodeIPFrom+i),
		PodCIDR: fmt.Sprintf("10.244.%d.0/24", i),
		Gateway: fmt.Sprintf("10.244.%d.1", i),
		Zone:    zones[(i-1)%len(zones)],
	}
}

// veth is the name of the node's link on the cluster bridge, in the cluster namespace; inside the
// node's namespace the other end is eth0.
func (n node) veth() string { return fmt.Sprintf("pqc-node-%d", n.Index) }

// podRangeStart leaves the bottom of the node's pod CIDR to its gateway.
func (n node) podRangeStart() string { return strings.TrimSuffix(n.PodCIDR, "0/24") + "10" }

// podBridgeMAC is the fixed MAC of the node's CNI bridge.
func (n node) podBridgeMAC() string { return fmt.Sprintf("02:70:71:63:%02x:01", n.Index) }

// topology is the cluster's shape, written by up and read by every other command, so that down, status
// and node faults act on exactly the nodes up made.
type topology struct {
	Nodes []node `json:"nodes"`
}

func newTopology(count int) (topology, error) {
	if count < 1 || count > maxNodes {
		return topology{}, fmt.Errorf("--nodes %d: a local cluster has 1 to %d nodes", count, maxNodes)
	}
	var t topology
	for i := 1; i <= count; i++ {
		t.Nodes = append(t.Nodes, newNode(i))
	}
	return t, nil
}

func (c *cluster) topologyFile() string { return c.path("topology.json") }

func (c *cluster) writeTopology(t topology) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.topologyFile(), data, 0o644)
}

// readTopology returns the topology up wrote. A cluster directory without one (a cluster that never
// got that far) has no nodes.
func (c *cluster) readTopology() (topology, error) {
	var t topology
	data, err := os.ReadFile(c.topologyFile())
	if os.IsNotExist(err) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("reading %s: %w", c.topologyFile(), err)
	}
	return t, nil
}

// node returns the named node of the running cluster's topology.
func (c *cluster) node(name string) (node, error) {
	t, err := c.readTopology()
	if err != nil {
		return node{}, err
	}
	var names []string
	for _, n := range t.Nodes {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return node{}, fmt.Errorf("no cluster in %s: run hack/local-cluster up", c.dir)
	}
	return node{}, fmt.Errorf("no node %q in this cluster (nodes: %s)", name, strings.Join(names, ", "))
}

// nodeDir is where everything of one node lives: containerd's root, kubelet's root, pod logs,
// volumes, configuration and the directories shadowing host paths.
func (c *cluster) nodeDir(n node, elem ...string) string {
	return filepath.Join(append([]string{c.dir, "nodes", n.Name}, elem...)...)
}

func (c *cluster) containerdSock(n node) string { return c.nodeDir(n, "containerd", "containerd.sock") }
