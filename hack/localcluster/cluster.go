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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// controlPlaneProcs are the cluster-level processes in the order up starts them.
var controlPlaneProcs = []string{networkProc, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// processes lists every process of the cluster t: the control plane, then each node's.
func processes(t topology) []string {
	out := append([]string(nil), controlPlaneProcs...)
	for _, n := range t.Nodes {
		for _, p := range nodeProcs {
			out = append(out, nodeProc(n, p))
		}
	}
	return out
}

// up starts a cluster of count nodes, or on a running one of that size rebuilds and reloads the images.
func (c *cluster) up(ctx context.Context, count int) error {
	start := time.Now()
	t, err := newTopology(count)
	if err != nil {
		return err
	}
	if running, _ := c.readTopology(); len(running.Nodes) > 0 && c.healthy(ctx, running) {
		if len(running.Nodes) != count {
			return fmt.Errorf("the cluster in %s runs %d nodes, not %d: run hack/local-cluster down first", c.dir, len(running.Nodes), count)
		}
		return c.reloadImages(ctx, running, start)
	}
	if c.anyRunning() {
		logf("a partial cluster is running in %s: stopping it first", c.dir)
		if err := c.down(); err != nil {
			return err
		}
	}
	if err := c.prepare(t); err != nil {
		return err
	}
	// The images build (CPU-bound Go builds) while the control plane starts (mostly waiting).
	images := make(chan error, 1)
	go func() { images <- c.buildImages(ctx) }()
	if err := c.startNetwork(ctx); err != nil {
		// Wait for the build to stop; say its error too, if it failed as well (the text is the network's
		// alone otherwise).
		return errors.Join(err, <-images)
	}
	if err := <-images; err != nil {
		return err
	}
	done := step("starting %d node(s), each in its own network and mount namespace", count)
	for _, n := range t.Nodes {
		if err := c.startNode(n); err != nil {
			return err
		}
	}
	if err := c.waitNodesReady(ctx, t.Nodes, time.Time{}); err != nil {
		return err
	}
	done()
	if err := c.bootstrap(ctx, t); err != nil {
		return err
	}
	c.printReady(start)
	return nil
}

// reloadImages rebuilds the images from the working tree and imports them into every running node.
func (c *cluster) reloadImages(ctx context.Context, t topology, start time.Time) error {
	logf("the cluster in %s is already running: rebuilding and reloading the images", c.dir)
	if err := c.buildImages(ctx); err != nil {
		return err
	}
	done := step("importing the images into each node's containerd")
	for _, n := range t.Nodes {
		if err := c.importImages(ctx, n); err != nil {
			return err
		}
	}
	done()
	c.printReady(start)
	return nil
}

// prepare makes a fresh cluster directory with the topology, certificates and every configuration file.
func (c *cluster) prepare(t topology) error {
	if err := os.RemoveAll(c.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	done := step("writing certificates and configuration to %s", c.dir)
	defer done()
	if err := c.writeTopology(t); err != nil {
		return err
	}
	if err := writePKI(c, t); err != nil {
		return err
	}
	if err := copyFile(c.path("pki", "admin.kubeconfig"), c.kubeconfig()); err != nil {
		return err
	}
	for _, n := range t.Nodes {
		if err := c.writeNodeConfig(n); err != nil {
			return err
		}
	}
	return nil
}

// bootstrap creates what every cluster has: each node's pod CIDR in its spec, the default StorageClass
// and the DNS add-on, and waits for the default ServiceAccount and for DNS to answer.
func (c *cluster) bootstrap(ctx context.Context, t topology) error {
	done := step("creating the StorageClass and the CoreDNS add-on")
	defer done()
	cs, err := c.client()
	if err != nil {
		return err
	}
	for _, n := range t.Nodes {
		patch := fmt.Appendf(nil, `{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, n.PodCIDR, n.PodCIDR)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting the pod CIDR of %s: %w", n.Name, err)
		}
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, storageClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", storageClassName, err)
	}
	if err := applyCoreDNS(ctx, cs, len(t.Nodes)); err != nil {
		return err
	}
	// The default ServiceAccount appears a moment after its namespace; pods cannot be created before.
	if err := c.waitFor(ctx, "the default ServiceAccount", "kube-controller-manager", time.Minute, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	return c.waitFor(ctx, "CoreDNS ready", "kube-apiserver", 3*time.Minute, func(ctx context.Context) error {
		return coreDNSReady(ctx, cs)
	})
}

func (c *cluster) printReady(start time.Time) {
	logf("cluster ready in %.0fs", time.Since(start).Seconds())
	fmt.Printf("export KUBECONFIG=%s\n", c.kubeconfig())
	fmt.Printf("# Helm values for this cluster: %s\n", c.helmValues())
}

// helmValues returns the path of the chart values that fit this cluster, written on first use: the
// locally built images, and this cluster's Service and pod ranges (allowed as endpoints, for the S3
// servers the e2e suite and the demo run in it). Everything else is the chart's defaults, with worker
// progress on.
func (c *cluster) helmValues() string {
	path := c.path("helm-values.yaml")
	repo, tag, _ := strings.Cut(pqcacheImage, ":")
	polarsRepo, polarsTag, _ := strings.Cut(polarsImage, ":")
	sparkRepo, sparkTag, _ := strings.Cut(sparkImage, ":")
	values := fmt.Sprintf(`# Values for charts/pqcache on the pqcache local cluster (hack/local-cluster): the images built and
# imported by up. The manager runs as an ordinary pod; every other value is the chart's default.
image:
  repository: %s
  tag: %s
  pullPolicy: Never
polars:
  image:
    repository: %s
    tag: %s
spark:
  image:
    repository: %s
    tag: %s
worker:
  # Workers publish live progress; each Dataset namespace needs the ServiceAccount and RoleBinding
  # that docs/datasets.md describes (the e2e suite and the demo create them).
  progress:
    enabled: true
# The node agents (off by default: --set agent.enabled=true turns them on) keep their copies under
# kubelet's root, which this cluster keeps per node: its nodes share this machine's one disk, so the
# chart's default hostPath would be one directory for every node's agent.
agent:
  cacheRoot: /var/lib/kubelet/pqcache-copies
  # The nodes share this machine's disk with its builds and Go caches: a node reserve of the chart's
  # 10Gi refuses every copy once the machine has less free.
  nodeReserve: 1Gi
# This cluster's own ranges are denied as endpoints, as on any cluster; the e2e suite and the demo
# run their S3 servers inside it (Services, pods), so both ranges are allowed again.
endpoints:
  serviceCIDRs: [%q]
  podCIDRs: [%q]
  allowedCIDRs: [%q, %q]
`, repo, tag, polarsRepo, polarsTag, sparkRepo, sparkTag, serviceCIDR, clusterCIDR, serviceCIDR, clusterCIDR)
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		logf("writing the Helm values: %v", err)
		return ""
	}
	return path
}

// healthy reports whether every process of t runs and every node is Ready.
func (c *cluster) healthy(ctx context.Context, t topology) bool {
	for _, p := range processes(t) {
		if _, ok := c.runningPID(p); !ok {
			return false
		}
	}
	for _, n := range t.Nodes {
		if c.nodeReady(ctx, n.Name) != nil {
			return false
		}
	}
	return true
}

// anyRunning reports whether any process recorded in the cluster directory still runs.
func (c *cluster) anyRunning() bool {
	pids, _ := filepath.Glob(c.path("pids", "*"))
	for _, p := range pids {
		if _, ok := c.runningPID(filepath.Base(p)); ok {
			return true
		}
	}
	return false
}

// client is the admin's client, from the host through the forwarder.
func (c *cluster) client() (*kubernetes.Clientset, error) {
	return c.clientFrom(c.path("pki", "admin.kubeconfig"))
}

// nodeClient is a client for code that runs in a node's namespace (the provisioner).
func (c *cluster) nodeClient() (*kubernetes.Clientset, error) {
	return c.clientFrom(c.path("pki", "provisioner.kubeconfig"))
}

func (c *cluster) clientFrom(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// nodeReady checks that the node is registered and Ready.
func (c *cluster) nodeReady(ctx context.Context, name string) error {
	return c.nodeReadySince(ctx, name, time.Time{})
}

// nodeReadySince checks that the node is Ready by a heartbeat of its kubelet at or after since.
func (c *cluster) nodeReadySince(ctx context.Context, name string, since time.Time) error {
	cs, err := c.client()
	if err != nil {
		return err
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
				return nil
			}
			if cond.Status == corev1.ConditionTrue {
				return fmt.Errorf("node %s has not reported since it started", name)
			}
			return fmt.Errorf("node %s is not Ready: %s: %s", name, cond.Reason, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

// status prints each process with its PID, and each node's link, condition, memory and CPU time.
func (c *cluster) status(ctx context.Context) error {
	t, err := c.readTopology()
	if err != nil {
		return err
	}
	running := 0
	all := processes(t)
	for _, p := range all {
		if pid, ok := c.runningPID(p); ok {
			fmt.Printf("%-24s running (pid %d)\n", p, pid)
			running++
		} else {
			fmt.Printf("%-24s stopped\n", p)
		}
	}
	if running == 0 {
		fmt.Printf("no cluster runs from %s\n", c.dir)
		return nil
	}
	mem, cpu := cgroupUsage(cgroupRoot + "/control-plane")
	fmt.Printf("control plane: %s, memory %d MiB, CPU time %.1fs\n", controlPlaneIP, mem>>20, float64(cpu)/1e9)
	for _, n := range t.Nodes {
		state := "Ready"
		if err := c.nodeReady(ctx, n.Name); err != nil {
			state = err.Error()
		}
		mem, cpu := cgroupUsage(nodeCgroup(n))
		fmt.Printf("node %s: %s, %s, link %s, memory %d MiB, CPU time %.1fs: %s\n", n.Name, n.IP, n.Zone, c.linkState(ctx, n), mem>>20, float64(cpu)/1e9, state)
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.kubeconfig())
	if running != len(all) {
		return errors.New("the cluster is only partly running (a stopped node is started again with hack/local-cluster node start NAME)")
	}
	return nil
}

// down stops every process of the cluster: each node's cgroup subtree is frozen and killed, which takes
// its daemons, shims and pods at once, then the control plane's; then anything recorded that still runs
// (found by PID and binary) and containerd shims started for the cluster's sockets. Then it removes the
// cgroups and the cluster directory. The network namespaces, with every link, route, rule and mount in
// them, go with their last process.
func (c *cluster) down() error {
	start := time.Now()
	t, _ := c.readTopology()
	for _, n := range t.Nodes {
		killCgroup(nodeCgroup(n))
	}
	killCgroup(cgroupRoot)
	pids, _ := filepath.Glob(c.path("pids", "*"))
	for _, p := range pids {
		c.stopProcess(filepath.Base(p), 5*time.Second)
	}
	c.killShims("")
	var left []string
	if err := removeCgroup(cgroupRoot); err != nil {
		left = append(left, err.Error())
	}
	// The bridge an earlier version of this tool made in the host's namespace.
	if exists("/sys/class/net/pqcache0") {
		if err := run(context.Background(), "ip", "link", "delete", "pqcache0"); err != nil {
			left = append(left, err.Error())
		}
	}
	created, _ := filepath.Glob(c.path("created-*"))
	created2, _ := filepath.Glob(c.path("node", "created-*")) // where an earlier version recorded them
	for _, f := range append(created, created2...) {
		if target, err := os.ReadFile(f); err == nil {
			// Only if empty: something else may have started using it since.
			if err := syscall.Rmdir(string(target)); err == nil {
				logf("removed the empty directory %s", target)
			}
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		left = append(left, fmt.Sprintf("removing %s: %v", c.dir, err))
	}
	if len(left) > 0 {
		return fmt.Errorf("the cluster is stopped but some things are left:\n  %s", strings.Join(left, "\n  "))
	}
	logf("down in %.1fs: processes stopped, namespaces gone, cgroups and %s removed", time.Since(start).Seconds(), c.dir)
	return nil
}

// killShims stops the containerd shims the cluster's containerds started whose socket address (in
// their command line) lies under prefix (a node's directory, or "" for any of the cluster's). They run
// in their node's cgroup and die with it; this catches any that escaped it.
func (c *cluster) killShims(prefix string) {
	if prefix == "" {
		prefix = c.dir + "/"
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && strings.HasPrefix(args[i+1], prefix) {
				terminate(pid, 5*time.Second)
				logf("stopped containerd shim %d", pid)
			}
		}
	}
}

// copyFile copies src to dst (created or truncated, mode 0600: a kubeconfig holds keys) without holding
// it in memory: an image's tarball is hundreds of megabytes.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // only read
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
