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
	"fmt"
	"time"
)

// Node faults, for tests of what a lost node does:
//   - stop: the node dies as a machine that loses power. Its cgroup subtree (supervisor, containerd and
//     shims, kubelet, kube-proxy, every pod) is frozen and killed at once; with its last process its
//     network namespace goes, and its link with it. Its disk (containerd's images, kubelet's root,
//     volumes, logs) stays.
//   - start: the node boots again: volatile state (/run) starts empty, the link is made again, and
//     kubelet finds its pods in the API and starts them anew.
//   - cut and join: the node's link goes down and comes back at the bridge, a network partition; every
//     process keeps running.

// nodeFault runs one of stop, start, cut and join on the named node.
func (c *cluster) nodeFault(ctx context.Context, action, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	switch action {
	case "stop":
		return c.stopNode(n)
	case "start":
		return c.restartNode(ctx, n)
	case "cut":
		if err := c.setLink(ctx, n, false); err != nil {
			return err
		}
		logf("node %s is cut off: its link is down (hack/local-cluster node join %s brings it back)", n.Name, n.Name)
		return nil
	case "join":
		if err := c.setLink(ctx, n, true); err != nil {
			return err
		}
		logf("node %s is joined again: its link is up", n.Name)
		return nil
	}
	return fmt.Errorf("node %s: unknown action %q (stop, start, cut or join)", name, action)
}

// stopNode kills everything of the node at once and forgets its processes.
func (c *cluster) stopNode(n node) error {
	start := time.Now()
	killCgroup(nodeCgroup(n))
	for _, p := range nodeProcs {
		c.stopProcess(nodeProc(n, p), time.Second)
	}
	c.killShims(c.nodeDir(n) + "/")
	logf("node %s stopped in %.1fs: kubelet, containerd, kube-proxy and every pod killed, its link gone (hack/local-cluster node start %s brings it back)",
		n.Name, time.Since(start).Seconds(), n.Name)
	return nil
}

// restartNode starts a stopped node again and waits until it is Ready.
func (c *cluster) restartNode(ctx context.Context, n node) error {
	if pid, ok := c.runningPID(nodeProc(n, "supervisor")); ok {
		return fmt.Errorf("node %s is running (supervisor pid %d): stop it first", n.Name, pid)
	}
	if _, ok := c.runningPID(networkProc); !ok {
		return fmt.Errorf("the cluster network is not running: run hack/local-cluster down, then up")
	}
	done := step("starting node %s", n.Name)
	start := time.Now()
	if err := c.startNode(n); err != nil {
		return err
	}
	if err := c.waitNodesReady(ctx, []node{n}, start); err != nil {
		return err
	}
	done()
	return nil
}
