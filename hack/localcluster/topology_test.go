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
	"net"
	"testing"
)

// TestTopologyAddressPlan: every node of the largest cluster gets its own address on the link, pod
// CIDR, gateway and link name, each valid where the kernel uses it, and the nodes span two zones.
func TestTopologyAddressPlan(t *testing.T) {
	for _, bad := range []int{0, maxNodes + 1} {
		if _, err := newTopology(bad); err == nil {
			t.Errorf("newTopology(%d) succeeded", bad)
		}
	}
	topo, err := newTopology(maxNodes)
	if err != nil {
		t.Fatal(err)
	}
	_, link, _ := net.ParseCIDR(linkCIDR)
	_, pods, _ := net.ParseCIDR(clusterCIDR)
	_, services, _ := net.ParseCIDR(serviceCIDR)
	seen := map[string]string{}
	unique := func(kind, v, node string) {
		if other, ok := seen[kind+v]; ok {
			t.Errorf("%s %s of %s is also %s's", kind, v, node, other)
		}
		seen[kind+v] = node
	}
	zones := map[string]int{}
	for _, n := range topo.Nodes {
		unique("address", n.IP, n.Name)
		unique("pod CIDR", n.PodCIDR, n.Name)
		unique("link", n.veth(), n.Name)
		unique("MAC", n.podBridgeMAC(), n.Name)
		zones[n.Zone]++
		if ip := net.ParseIP(n.IP); ip == nil || !link.Contains(ip) || ip.String() == controlPlaneIP {
			t.Errorf("%s: address %s is not a free address of %s", n.Name, n.IP, linkCIDR)
		}
		_, cidr, err := net.ParseCIDR(n.PodCIDR)
		if err != nil || !pods.Contains(cidr.IP) || services.Contains(cidr.IP) {
			t.Errorf("%s: pod CIDR %s is not inside %s and outside %s (%v)", n.Name, n.PodCIDR, clusterCIDR, serviceCIDR, err)
			continue
		}
		for _, ip := range []string{n.Gateway, n.podRangeStart()} {
			if !cidr.Contains(net.ParseIP(ip)) {
				t.Errorf("%s: %s is outside its pod CIDR %s", n.Name, ip, n.PodCIDR)
			}
		}
		if len(n.veth()) > 15 {
			t.Errorf("%s: link name %q is longer than the kernel's 15 bytes", n.Name, n.veth())
		}
	}
	if len(zones) != 2 || zones["zone-a"] != zones["zone-b"] {
		t.Errorf("zones %v: want the nodes split evenly over two", zones)
	}
	for _, ip := range []string{serviceIP, dnsIP} {
		if !services.Contains(net.ParseIP(ip)) {
			t.Errorf("%s is outside the Service CIDR %s", ip, serviceCIDR)
		}
	}
}
