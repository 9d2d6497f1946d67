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

// Command localcluster runs a real Kubernetes cluster of one or more nodes on this machine, built
// offline. Each node is a host of its own: a network namespace with an address on a private link (a veth
// pair into a bridge that lives in a namespace of this tool's own), its own containerd, kubelet and
// kube-proxy, cgroup subtree, volume directory and pod CIDR. The control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) runs in the bridge's namespace; a forwarder in that same
// process gives the host 127.0.0.1:16443. CoreDNS runs as a cluster add-on. The host's sysctls, iptables
// rules, cgroup mounts, interfaces and routes are never changed: every rule and sysctl this tool sets
// belongs to a namespace it created. Everything lives in one directory (bin/cluster by default) and one
// cgroup subtree (/pqcache-local), and `down` removes both, stopping only the processes `up` started.
//
// hack/local-cluster builds and runs it:
//
//	hack/local-cluster up --nodes 3          # build what is missing, start the cluster, load the images
//	hack/local-cluster status                # what runs, with PIDs, and each node's condition
//	hack/local-cluster node stop|start NAME  # a node dies (its processes are killed) and comes back
//	hack/local-cluster node cut|join NAME    # a node's link goes down and comes back
//	hack/local-cluster down                  # stop everything and remove the cluster directory
//
// The facts behind each setting are in docs/local-cluster.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

const (
	clusterName = "pqcache-local"
	// cgroupRoot is the one cgroup subtree, in every hierarchy, that holds the cluster: control-plane/
	// for the control plane, and one subtree per node (system/ for its daemons, kubepods/ for its pods).
	cgroupRoot = "pqcache-local"
	// provisionerName provisions local PersistentVolumes in each node's directory (provisioner.go).
	provisionerName  = "local.pqcache.dev/dir"
	storageClassName = "pqcache-local"
)

// Ports. The host sees only hostAPIPort on 127.0.0.1; every other port is inside the cluster's or a
// node's own network namespace, so the usual ports are used there.
const (
	hostAPIPort      = 16443
	apiserverPort    = 6443
	etcdClientPort   = 2379
	etcdPeerPort     = 2380
	kubeletPort      = 10250
	kubeletHealthz   = 10248
	kubeProxyHealthz = 10256
	kubeProxyMetrics = 10249
	controllerHealth = 10257
	schedulerHealth  = 10259
)

// cluster names the paths of one local cluster.
type cluster struct {
	root string // repository root
	dir  string // state directory: everything the cluster writes
	bins string // kube-apiserver, etcd, kubelet, ... (bin/k8s/<version>-linux-amd64)
	self string // this program, for the supervisors
}

func (c *cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.dir}, elem...)...)
}
func (c *cluster) bin(name string) string { return filepath.Join(c.bins, name) }

// hostAPIServerURL is where the host's kubectl, helm and tests reach the API server (the forwarder).
func (c *cluster) hostAPIServerURL() string { return fmt.Sprintf("https://127.0.0.1:%d", hostAPIPort) }
func (c *cluster) kubeconfig() string       { return c.path("kubeconfig") }

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	c, err := newCluster()
	if err != nil {
		fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.dispatch(ctx, os.Args[1], os.Args[2:]); err != nil {
		fatal(err)
	}
}

// dispatch runs one subcommand.
func (c *cluster) dispatch(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "up":
		fs := flag.NewFlagSet("up", flag.ExitOnError)
		nodes := fs.Int("nodes", 3, "number of nodes (1 to 8)")
		_ = fs.Parse(args)
		return c.up(ctx, *nodes)
	case "down":
		return c.down()
	case "status":
		return c.status(ctx)
	case "node":
		if len(args) != 2 {
			usage()
		}
		return c.nodeFault(ctx, args[0], args[1])
	case "run-network":
		// Internal: the cluster network supervisor, started by up in a new network namespace.
		return c.runNetwork(ctx)
	case "run-node":
		// Internal: a node supervisor, started by up or node start in new mount and network namespaces.
		if len(args) != 1 {
			usage()
		}
		return c.runNode(ctx, args[0])
	}
	usage()
	return nil
}

func newCluster() (*cluster, error) {
	root := os.Getenv("PQCACHE_ROOT")
	if root == "" {
		return nil, errors.New("PQCACHE_ROOT is not set: run this through hack/local-cluster")
	}
	dir := os.Getenv("PQCACHE_CLUSTER_DIR")
	if dir == "" {
		dir = filepath.Join(root, "bin", "cluster")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &cluster{root: root, dir: dir, bins: os.Getenv("PQCACHE_K8S_BINS"), self: self}
	if c.bins == "" {
		return nil, errors.New("PQCACHE_K8S_BINS is not set: run this through hack/local-cluster")
	}
	// A unix socket path must fit in 108 bytes; containerd's ttrpc socket is the longest we make.
	if n := len(c.containerdSock(newNode(maxNodes)) + ".ttrpc"); n > 100 {
		return nil, fmt.Errorf("cluster directory %s is too deep for unix sockets (%d bytes): set PQCACHE_CLUSTER_DIR to a shorter path", dir, n)
	}
	return c, nil
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: hack/local-cluster up [--nodes N] | down | status | node stop|start|cut|join NAME")
	os.Exit(2)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "local-cluster:", err)
	os.Exit(1)
}

// step prints what is about to happen and, when done is called, how long it took.
func step(format string, args ...any) (done func()) {
	start := time.Now()
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "local-cluster: %s ...\n", msg)
	return func() {
		fmt.Fprintf(os.Stderr, "local-cluster: %s: done in %.1fs\n", msg, time.Since(start).Seconds())
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "local-cluster: "+format+"\n", args...)
}
