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

// Command localcluster runs a real one-node Kubernetes cluster on this machine, built offline: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler as host processes on 127.0.0.1, and
// containerd plus kubelet inside a private mount namespace. Pods get addresses on a bridge with no
// gateway, so they reach each other and nothing else; the host's sysctls, iptables rules and cgroup
// mounts are never changed. Everything lives in one directory (bin/cluster by default) and one cgroup
// subtree (/pqcache-local), and `down` removes both, stopping only the processes `up` started.
//
// hack/local-cluster builds and runs it:
//
//	hack/local-cluster up       # build what is missing, start the cluster, load the images
//	hack/local-cluster status   # what runs, with PIDs, and the node's condition
//	hack/local-cluster down     # stop everything and remove the cluster directory
//
// The facts behind each setting are in docs/local-cluster.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

const (
	clusterName = "pqcache-local"
	nodeName    = "pqcache-local"
	// cgroupRoot is the one cgroup subtree, in every hierarchy, that holds the node's pods.
	cgroupRoot = "pqcache-local"
	// bridgeName is the CNI bridge. It has one address, bridgeIP, which pods never get: the host
	// reaches pods and pods reach the host's bridge address (the manager's event endpoint binds there,
	// and only there), and nothing is routed beyond: no gateway for pods, no forwarding, no masquerade.
	bridgeName = "pqcache0"
	podSubnet  = "10.244.77.0/24"
	bridgeIP   = "10.244.77.1"
	// bridgeMAC is the bridge's own, fixed MAC address (locally administered): see makeBridge.
	bridgeMAC = "02:70:71:63:00:01"
	// podRangeStart leaves the bottom of the subnet to the bridge.
	podRangeStart = "10.244.77.10"
	// eventsPort is where the manager's event endpoint listens, on bridgeIP.
	eventsPort  = 18082
	serviceCIDR = "10.97.0.0/24"
	serviceIP   = "10.97.0.1"
	// provisionerName provisions local PersistentVolumes in the cluster directory (provisioner.go).
	provisionerName  = "local.pqcache.dev/dir"
	storageClassName = "pqcache-local"
)

// ports on 127.0.0.1. They are far from the defaults so that a cluster here does not collide with a
// kind cluster or a kubelet on the same host.
const (
	etcdClientPort   = 12379
	etcdPeerPort     = 12380
	apiserverPort    = 16443
	kubeletPort      = 10350
	kubeletHealthz   = 10348
	controllerHealth = 10357
	schedulerHealth  = 10359
)

// cluster names the paths of one local cluster.
type cluster struct {
	root string // repository root
	dir  string // state directory: everything the cluster writes
	bins string // kube-apiserver, etcd, kubelet, ... (bin/k8s/<version>-linux-amd64)
	self string // this program, for the node supervisor
}

func (c *cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.dir}, elem...)...)
}
func (c *cluster) bin(name string) string { return filepath.Join(c.bins, name) }
func (c *cluster) apiserverURL() string   { return fmt.Sprintf("https://127.0.0.1:%d", apiserverPort) }
func (c *cluster) kubeconfig() string     { return c.path("kubeconfig") }
func (c *cluster) containerdSock() string { return c.path("containerd", "containerd.sock") }

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
	switch os.Args[1] {
	case "up":
		err = c.up(ctx)
	case "down":
		err = c.down()
	case "status":
		err = c.status(ctx)
	case "node":
		// Internal: the node supervisor, started by up inside `unshare -m`.
		err = c.runNode(ctx)
	default:
		usage()
	}
	if err != nil {
		fatal(err)
	}
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
	if n := len(c.containerdSock() + ".ttrpc"); n > 100 {
		return nil, fmt.Errorf("cluster directory %s is too deep for unix sockets (%d bytes): set PQCACHE_CLUSTER_DIR to a shorter path", dir, n)
	}
	return c, nil
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: hack/local-cluster up|down|status")
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
