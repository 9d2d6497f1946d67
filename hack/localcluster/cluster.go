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
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// processes in the order up starts them; down stops them in reverse.
var processes = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "node", "containerd", "kubelet"}

// up starts the cluster, or on a running one rebuilds and reloads the images.
func (c *cluster) up(ctx context.Context) error {
	start := time.Now()
	if c.healthy(ctx) {
		logf("the cluster in %s is already running: rebuilding and reloading the images", c.dir)
		if err := makeBridge(ctx); err != nil { // a cluster started before the bridge had its address
			return err
		}
		if err := c.buildImages(ctx); err != nil {
			return err
		}
		done := step("importing the images into containerd")
		if err := c.importImages(ctx); err != nil {
			return err
		}
		done()
		c.printReady(start)
		return nil
	}
	if c.anyRunning() {
		logf("a partial cluster is running in %s: stopping it first", c.dir)
		if err := c.down(); err != nil {
			return err
		}
	}
	if err := portsFree(); err != nil {
		return err
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	done := step("writing certificates and configuration to %s", c.dir)
	if err := writePKI(c); err != nil {
		return err
	}
	if err := copyFile(c.path("pki", "admin.kubeconfig"), c.kubeconfig()); err != nil {
		return err
	}
	if err := c.writeNodeConfig(); err != nil {
		return err
	}
	done()

	// The images build (CPU-bound Go builds) while the control plane starts (mostly waiting).
	images := make(chan error, 1)
	go func() { images <- c.buildImages(ctx) }()
	if err := c.startControlPlane(ctx); err != nil {
		<-images
		return err
	}
	if err := <-images; err != nil {
		return err
	}
	if err := c.startNode(ctx); err != nil {
		return err
	}
	if err := c.bootstrap(ctx); err != nil {
		return err
	}
	c.printReady(start)
	return nil
}

// bootstrap creates what every cluster has: the default StorageClass.
func (c *cluster) bootstrap(ctx context.Context) error {
	cs, err := c.client()
	if err != nil {
		return err
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, storageClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", storageClassName, err)
	}
	// The default ServiceAccount appears a moment after its namespace; pods cannot be created before.
	return c.waitFor(ctx, "the default ServiceAccount", "kube-controller-manager", time.Minute, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func (c *cluster) printReady(start time.Time) {
	logf("cluster ready in %.0fs", time.Since(start).Seconds())
	fmt.Printf("export KUBECONFIG=%s\n", c.kubeconfig())
	fmt.Printf("# Helm values for this cluster: %s\n", c.helmValues())
}

// helmValues returns the path of the chart values that fit this cluster, written on first use.
func (c *cluster) helmValues() string {
	path := c.path("helm-values.yaml")
	values := fmt.Sprintf(`# Values for charts/pqcache on the pqcache local cluster (hack/local-cluster).
image:
  repository: %s
  tag: %s
  pullPolicy: Never
# Pods on the bridge cannot reach the API server on the host's loopback, so the manager runs in the
# host's network namespace and is told where the API server listens.
hostNetwork: true
extraEnv:
  - name: KUBERNETES_SERVICE_HOST
    value: 127.0.0.1
  - name: KUBERNETES_SERVICE_PORT
    value: "%d"
metrics:
  port: 18080
healthPort: 18081
polars:
  image:
    repository: %s
    tag: %s
# The event endpoint listens on the pods' bridge, where in-cluster stores can post to it.
events:
  bindHost: %s
  port: %d
`, strings.Split(pqcacheImage, ":")[0], strings.Split(pqcacheImage, ":")[1], apiserverPort,
		strings.Split(polarsImage, ":")[0], strings.Split(polarsImage, ":")[1], bridgeIP, eventsPort)
	_ = os.WriteFile(path, []byte(values), 0o644)
	return path
}

// healthy reports whether every process runs and the node is Ready.
func (c *cluster) healthy(ctx context.Context) bool {
	for _, p := range processes {
		if _, ok := c.runningPID(p); !ok {
			return false
		}
	}
	return c.nodeReady(ctx) == nil
}

func (c *cluster) anyRunning() bool {
	for _, p := range processes {
		if _, ok := c.runningPID(p); ok {
			return true
		}
	}
	return false
}

func (c *cluster) client() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.path("pki", "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// nodeReady checks that the node is registered and Ready.
func (c *cluster) nodeReady(ctx context.Context) error {
	cs, err := c.client()
	if err != nil {
		return err
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s is not Ready: %s: %s", nodeName, cond.Reason, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", nodeName)
}

// status prints each process with its PID and the node's state.
func (c *cluster) status(ctx context.Context) error {
	running := 0
	for _, p := range processes {
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
	if err := c.nodeReady(ctx); err != nil {
		fmt.Printf("node: %v\n", err)
	} else {
		fmt.Printf("node %s Ready\n", nodeName)
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.kubeconfig())
	if running != len(processes) {
		return errors.New("the cluster is only partly running: run hack/local-cluster down, then up")
	}
	return nil
}

// down stops every process the cluster started, the pods' processes (found through the cluster's
// cgroup subtree) and containerd's shims (found by the socket they were given), then removes the
// cgroups, the bridge and the cluster directory.
func (c *cluster) down() error {
	start := time.Now()
	c.stopProcess("kubelet", 15*time.Second)
	c.killPods()
	c.killShims()
	for i := len(processes) - 1; i >= 0; i-- {
		if p := processes[i]; p != "kubelet" {
			c.stopProcess(p, 15*time.Second)
		}
	}
	var left []string
	if err := removeCgroupRoot(); err != nil {
		left = append(left, err.Error())
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if err := run(context.Background(), "ip", "link", "delete", bridgeName); err != nil {
			left = append(left, err.Error())
		} else {
			logf("deleted the bridge %s", bridgeName)
		}
	}
	created, _ := filepath.Glob(c.path("node", "created-*"))
	for _, f := range created {
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
	logf("down in %.1fs: processes stopped, cgroups, bridge and %s removed", time.Since(start).Seconds(), c.dir)
	return nil
}

// cgroupDirs lists the cluster's cgroup directories in every hierarchy, deepest first.
func cgroupDirs() []string {
	var dirs []string
	for _, ctl := range cgroupControllers() {
		root := filepath.Join("/sys/fs/cgroup", ctl, cgroupRoot)
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killPods SIGKILLs every process in the cluster's cgroups: the pods' containers and sandboxes.
func (c *cluster) killPods() {
	for range 50 {
		killed := 0
		for _, dir := range cgroupDirs() {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed++
				}
			}
		}
		if killed == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killShims stops the containerd shims this cluster's containerd started: they run outside the
// cluster's cgroups and survive containerd, and are recognised by the socket address in their
// command line.
func (c *cluster) killShims() {
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
			if a == "-address" && i+1 < len(args) && args[i+1] == c.containerdSock() {
				terminate(pid, 5*time.Second)
				logf("stopped containerd shim %d", pid)
			}
		}
	}
}

// removeCgroupRoot removes the cluster's cgroup directories, retrying while their last processes exit.
func removeCgroupRoot() error {
	var last error
	for range 50 {
		last = nil
		for _, dir := range cgroupDirs() {
			if err := syscall.Rmdir(dir); err != nil && !os.IsNotExist(err) {
				last = fmt.Errorf("removing cgroup %s: %w", dir, err)
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}

// portsFree checks that nothing listens on the cluster's ports, so that a second cluster (another
// checkout's) or another program fails up at once with a clear message rather than halfway through.
func portsFree() error {
	for _, port := range []int{etcdClientPort, etcdPeerPort, apiserverPort, kubeletPort, kubeletHealthz, controllerHealth, schedulerHealth} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Errorf("127.0.0.1:%d is in use (%v): is another local cluster running? Stop it with hack/local-cluster down in its checkout", port, err)
		}
		l.Close()
	}
	return nil
}
