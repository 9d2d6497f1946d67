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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The cluster network. The network supervisor (runNetwork) is started by up with CLONE_NEWNET: its new,
// empty namespace becomes the cluster network namespace. There it makes the bridge that links the nodes,
// routes each node's pod CIDR to the node, starts the control plane, and forwards the host's
// 127.0.0.1:16443 (a listening socket that up opened in the host's namespace and passed on) to the API
// server. The namespace lives as long as a process is in it; down kills them all and it is gone, bridge
// and routes with it.

// networkProc is the recorded name of the network supervisor.
const networkProc = "network"

// startNetwork opens the host's API port, starts the network supervisor in a new network namespace
// with that socket, and waits until the control plane is up.
func (c *cluster) startNetwork(ctx context.Context) error {
	done := step("starting the cluster network and the control plane (log: %s)", c.path("logs", networkProc+".log"))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", hostAPIPort))
	if err != nil {
		return fmt.Errorf("127.0.0.1:%d is in use (%w): is another local cluster running? Stop it with hack/local-cluster down in its checkout", hostAPIPort, err)
	}
	f, err := ln.(*net.TCPListener).File()
	_ = ln.Close() // the duplicate in f keeps the socket open for the supervisor
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // the supervisor has its own duplicate
	if err := c.startProcess(networkProc, c.self, []string{"run-network"}, procOpts{unshare: syscall.CLONE_NEWNET, files: []*os.File{f}}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the control plane", networkProc, 3*time.Minute, func(context.Context) error {
		if !exists(c.path("control-plane-ready")) {
			return errors.New("not ready yet")
		}
		return nil
	}); err != nil {
		return err
	}
	done()
	return nil
}

// runNetwork is the network supervisor, in the new cluster network namespace.
func (c *cluster) runNetwork(ctx context.Context) error {
	logf("network supervisor %d: preparing the cluster network namespace", os.Getpid())
	if err := joinCgroup(cgroupRoot + "/control-plane"); err != nil {
		return err
	}
	t, err := c.readTopology()
	if err != nil {
		return err
	}
	if err := makeClusterLink(ctx, t); err != nil {
		return err
	}
	// FileListener duplicates the descriptor close-on-exec; the inherited one is closed, so that the
	// control plane's processes do not hold the host's port too.
	inherited := os.NewFile(3, "host-api-listener")
	ln, err := net.FileListener(inherited)
	_ = inherited.Close()
	if err != nil {
		return fmt.Errorf("taking over the host's API listener: %w", err)
	}
	go forward(ctx, ln, fmt.Sprintf("127.0.0.1:%d", apiserverPort))
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("control-plane-ready"), nil, 0o644); err != nil {
		return err
	}
	logf("network supervisor: control plane ready")
	<-ctx.Done()
	return nil
}

// makeClusterLink sets up the cluster namespace: loopback, no IPv6, the bridge with its fixed MAC and
// address, and a route to each node's pod CIDR through the node's address. It forwards nothing (the
// nodes talk to each other through the bridge, at layer 2).
func makeClusterLink(ctx context.Context, t topology) error {
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", linkBridge, "type", "bridge"},
		{"link", "set", linkBridge, "address", linkBridgeMAC},
		{"addr", "add", fmt.Sprintf("%s/%d", controlPlaneIP, linkPrefix), "dev", linkBridge},
		{"link", "set", linkBridge, "up"},
	}
	for _, n := range t.Nodes {
		steps = append(steps, []string{"route", "add", n.PodCIDR, "via", n.IP})
	}
	if err := disableIPv6(); err != nil {
		return err
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// disableIPv6 turns IPv6 off in the caller's network namespace: the cluster is IPv4 only, and
// kube-proxy then runs single-stack instead of looking for node addresses that do not exist.
func disableIPv6() error {
	for _, f := range []string{"all", "default"} {
		if err := writeSysctl("net/ipv6/conf/"+f+"/disable_ipv6", "1"); err != nil {
			return err
		}
	}
	return nil
}

// writeSysctl writes a network sysctl. /proc/sys/net is per network namespace: the value belongs to the
// namespace the caller is in, always one this tool created.
func writeSysctl(name, value string) error {
	path := filepath.Join("/proc/sys", name)
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s in the namespace's own sysctls: %w", path, err)
	}
	return nil
}

// forward accepts connections on ln (a socket of the host's namespace) and joins each to a connection
// dialled to target from this process's namespace.
func forward(ctx context.Context, ln net.Listener, target string) {
	go func() { <-ctx.Done(); _ = ln.Close() }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logf("forwarder: accepting: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go pipe(ctx, conn, target)
	}
}

// pipe copies between conn and a new connection to target until either side closes. ctx bounds only
// the dial.
func pipe(ctx context.Context, conn net.Conn, target string) {
	defer func() { _ = conn.Close() }()
	up, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", target)
	if err != nil {
		logf("forwarder: dialling %s: %v", target, err)
		return
	}
	defer func() { _ = up.Close() }()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Pass the end of one direction on, so the other can finish.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go half(up, conn)
	go half(conn, up)
	wg.Wait()
}

// inClusterNetns runs `ip args...` in the cluster network namespace, entered through the network
// supervisor's /proc entry.
func (c *cluster) inClusterNetns(ctx context.Context, args ...string) error {
	pid, ok := c.runningPID(networkProc)
	if !ok {
		return errors.New("the cluster network supervisor is not running: run hack/local-cluster down, then up")
	}
	return run(ctx, "nsenter", append([]string{"--net=/proc/" + strconv.Itoa(pid) + "/ns/net", "ip"}, args...)...)
}

// makeNodeLink sets up a node's namespace from inside it (the node supervisor calls it): a veth pair
// whose eth0 end stays here with the node's address and whose other end goes into the cluster
// namespace, onto the bridge; routes to the other nodes' pod CIDRs through their addresses, and to the
// Service CIDR through the control plane (kube-proxy rewrites such packets before they go anywhere;
// the route only lets the node's own processes send them); forwarding on, so the node routes for its
// pods; and the node's pod bridge, made before CNI would make it, with a fixed MAC.
func (c *cluster) makeNodeLink(ctx context.Context, t topology, n node) error {
	pid, ok := c.runningPID(networkProc)
	if !ok {
		return errors.New("the cluster network supervisor is not running: run hack/local-cluster down, then up")
	}
	// A stopped node's old link may still be on its way out with its old namespace.
	_ = c.inClusterNetns(ctx, "link", "delete", n.veth())
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "eth0", "type", "veth", "peer", "name", n.veth(), "netns", strconv.Itoa(pid)},
		{"addr", "add", fmt.Sprintf("%s/%d", n.IP, linkPrefix), "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", serviceCIDR, "via", controlPlaneIP},
		{"link", "add", podBridge, "type", "bridge"},
		{"link", "set", podBridge, "address", n.podBridgeMAC()},
		{"link", "set", podBridge, "up"},
	}
	for _, other := range t.Nodes {
		if other.Name != n.Name {
			steps = append(steps, []string{"route", "add", other.PodCIDR, "via", other.IP})
		}
	}
	if err := disableIPv6(); err != nil {
		return err
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return err
		}
	}
	if err := c.inClusterNetns(ctx, "link", "set", n.veth(), "master", linkBridge, "up"); err != nil {
		return err
	}
	// Routing for the pods, and bridged pod-to-pod traffic through the node's own netfilter rules, so
	// that a Service's reply from a pod on the same bridge is translated back (built into this kernel;
	// on by default in a new namespace, set here so that it does not depend on that).
	if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
		return err
	}
	if exists("/proc/sys/net/bridge/bridge-nf-call-iptables") {
		return writeSysctl("net/bridge/bridge-nf-call-iptables", "1")
	}
	logf("node %s: no br_netfilter in this kernel: Services whose client and server share a node need kube-proxy's masqueradeAll", n.Name)
	return nil
}

// setLink cuts (down) or joins (up) a node's link, at the bridge's end, as a pulled cable would: the
// node keeps its address and routes and sees no carrier.
func (c *cluster) setLink(ctx context.Context, n node, up bool) error {
	state := map[bool]string{true: "up", false: "down"}[up]
	if err := c.inClusterNetns(ctx, "link", "set", n.veth(), state); err != nil {
		return fmt.Errorf("setting the link of %s %s: %w", n.Name, state, err)
	}
	return nil
}

// linkState reports the bridge end of a node's link, for status.
func (c *cluster) linkState(ctx context.Context, n node) string {
	pid, ok := c.runningPID(networkProc)
	if !ok {
		return "no network"
	}
	out, err := runOutput(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "ip", "-br", "link", "show", n.veth())
	if err != nil {
		return "absent"
	}
	if f := strings.Fields(out); len(f) > 1 {
		return strings.ToLower(f[1])
	}
	return strings.TrimSpace(out)
}
