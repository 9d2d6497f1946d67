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
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// kernelDefaults are the sysctls kubelet wants. With protectKernelDefaults it only checks them instead
// of writing them; inside the node's mount namespace each of these /proc/sys files is covered by a
// plain file holding the expected value, so the check passes and the host's values stay as they are.
var kernelDefaults = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// shadowedDirs are host paths that containerd, its shims, the CNI plugins or kubelet write to no matter
// how they are configured. Inside each node's mount namespace each is covered by a directory of that
// node, so the nodes do not share them and their files vanish with the cluster. volatile ones are
// emptied when the node starts, as /run is by a reboot.
var shadowedDirs = []struct {
	path     string
	volatile bool
}{
	{"/run/containerd", true},      // shim sockets
	{"/run/netns", true},           // pod network namespaces
	{"/var/lib/cni", false},        // CNI result cache
	{"/var/log/containers", false}, // kubelet's log symlinks
	{"/var/lib/kubelet", false},    // kubelet's root: pods, plugins, plugins_registry, device plugins
}

// nodeProc is the recorded name of one of a node's processes.
func nodeProc(n node, name string) string { return n.Name + "." + name }

// nodeProcs are a node's processes, in the order its supervisor starts them.
var nodeProcs = []string{"supervisor", "containerd", "kubelet", "kube-proxy"}

// nodeCgroup is the node's cgroup subtree, relative to each hierarchy's root.
func nodeCgroup(n node) string { return cgroupRoot + "/" + n.Name }

// writeNodeConfig writes the node's containerd, CNI, kubelet and kube-proxy configuration.
func (c *cluster) writeNodeConfig(n node) error {
	for _, d := range []string{"config/cni", "config/sysctl", "containerd", "pod-logs", "volumes", "shadow"} {
		if err := os.MkdirAll(c.nodeDir(n, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"config/containerd.toml":         c.containerdConfig(n),
		"config/cni/10-pqcache.conflist": c.cniConfig(n),
		"config/kubelet.yaml":            c.kubeletConfig(n),
		"config/kube-proxy.yaml":         c.kubeProxyConfig(n),
		"config/resolv.conf":             "# no name servers outside the cluster: nothing outside it is reachable\n",
	}
	for name, value := range kernelDefaults {
		files["config/sysctl/"+strings.ReplaceAll(name, "/", ".")] = value + "\n"
	}
	for name, content := range files {
		if err := os.WriteFile(c.nodeDir(n, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) containerdConfig(n node) string {
	return fmt.Sprintf(`# containerd for node %[1]s of the pqcache local cluster.
version = 2
root = %[2]q
state = %[3]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[4]q

[ttrpc]
  address = "%[4]s.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  # root here lacks CAP_SYS_RESOURCE, so runc cannot give the sandbox the oom_score_adj of -998 kubelet asks for.
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  # In the node's own namespace: kubelet proxies exec, attach and port-forward to it.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
`, n.Name, c.nodeDir(n, "containerd", "root"), c.nodeDir(n, "run", "containerd"), c.containerdSock(n),
		c.nodeDir(n, "containerd", "opt"), pauseImage, c.nodeDir(n, "config", "cni"))
}

// cniConfig is the node's pod network: a bridge that is the pods' gateway, addresses from the node's
// pod CIDR, no masquerade (pod addresses are routed between the nodes as they are).
func (c *cluster) cniConfig(n node) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "rangeStart": %q, "gateway": %q}]], "dataDir": %q}
    }
  ]
}
`, clusterName, podBridge, n.PodCIDR, n.podRangeStart(), n.Gateway, c.nodeDir(n, "run", "ipam"))
}

func (c *cluster) kubeletConfig(n node) string {
	pki := func(f string) string { return c.path("pki", f) }
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Logs, exec and port-forward are served on the node's address; the API server is the client.
address: %[1]s
port: %[2]d
readOnlyPort: 0
tlsCertFile: %[3]q
tlsPrivateKeyFile: %[4]q
healthzBindAddress: 127.0.0.1
healthzPort: %[5]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]q}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://%[7]s
cgroupDriver: cgroupfs
cgroupRoot: /%[8]s
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: true
makeIPTablesUtilChains: false
oomScoreAdj: 0
podLogsDir: %[9]q
resolvConf: %[10]q
clusterDomain: cluster.local
clusterDNS: [%[11]s]
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
serializeImagePulls: false
maxPods: 110
`, n.IP, kubeletPort, pki("kubelet-"+n.Name+"-serving.crt"), pki("kubelet-"+n.Name+"-serving.key"), kubeletHealthz,
		pki("ca.crt"), c.containerdSock(n), nodeCgroup(n), c.nodeDir(n, "pod-logs"), c.nodeDir(n, "config", "resolv.conf"), dnsIP)
}

// kubeProxyConfig: nftables mode, its rules in the node's namespace. conntrack settings of 0 leave the
// kernel's conntrack table size alone (nf_conntrack_max is the host's, not the namespace's).
func (c *cluster) kubeProxyConfig(n node) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]q
hostnameOverride: %[2]s
bindAddress: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
clusterCIDR: %[6]s
detectLocalMode: ClusterCIDR
nodePortAddresses: [primary]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.path("pki", "kube-proxy.kubeconfig"), n.Name, n.IP, kubeProxyHealthz, kubeProxyMetrics, clusterCIDR)
}

// startNode starts a node's supervisor (runNode) in new mount and network namespaces.
func (c *cluster) startNode(n node) error {
	if err := makeCgroup(nodeCgroup(n)); err != nil {
		return err
	}
	return c.startProcess(nodeProc(n, "supervisor"), c.self, []string{"run-node", n.Name},
		procOpts{unshare: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET})
}

// waitNodesReady waits until every named node is registered and its kubelet has reported it Ready
// since the given time (a restarted node's old Ready status does not count).
func (c *cluster) waitNodesReady(ctx context.Context, nodes []node, since time.Time) error {
	for _, n := range nodes {
		if err := c.waitFor(ctx, "node "+n.Name+" Ready", nodeProc(n, "supervisor"), 3*time.Minute,
			func(ctx context.Context) error { return c.nodeReadySince(ctx, n.Name, since) }); err != nil {
			return err
		}
	}
	return nil
}

// runNode is a node's supervisor, in the node's own mount and network namespaces (made by startNode;
// Go made the mounts private, so nothing mounted here reaches the host). It moves into the node's
// cgroup, sets up the node's link, covers the paths in kernelDefaults and shadowedDirs, starts
// containerd, imports the images, starts kubelet, kube-proxy and the volume provisioner, and waits.
func (c *cluster) runNode(ctx context.Context, name string) error {
	t, err := c.readTopology()
	if err != nil {
		return err
	}
	n, err := c.node(name)
	if err != nil {
		return err
	}
	logf("node %s supervisor %d: preparing the node's namespaces", n.Name, os.Getpid())
	if err := joinCgroup(nodeCgroup(n) + "/system"); err != nil {
		return err
	}
	if err := c.makeNodeLink(ctx, t, n); err != nil {
		return err
	}
	if err := c.coverHostPaths(n); err != nil {
		return err
	}
	// Pulls have nowhere to go: the images the cluster needs are imported, and an image that is missing
	// should fail fast instead of reaching for a registry. The cluster's own addresses are not proxied.
	noProxy := strings.Join([]string{linkCIDR, serviceCIDR, clusterCIDR, "127.0.0.1", "localhost"}, ",")
	noNetwork := []string{"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=" + noProxy, "http_proxy=", "https_proxy=", "no_proxy="}
	if err := c.startProcess(nodeProc(n, "containerd"), "/usr/bin/containerd", []string{"--config", c.nodeDir(n, "config", "containerd.toml")}, procOpts{env: noNetwork}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd socket", nodeProc(n, "containerd"), 30*time.Second, func(ctx context.Context) error {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.containerdSock(n))
		if err == nil {
			_ = conn.Close() // only a probe
		}
		return err
	}); err != nil {
		return err
	}
	if err := c.importImages(ctx, n); err != nil {
		return err
	}
	if err := c.startProcess(nodeProc(n, "kubelet"), c.bin("kubelet"), []string{
		"--config=" + c.nodeDir(n, "config", "kubelet.yaml"),
		"--kubeconfig=" + c.path("pki", "kubelet-"+n.Name+".kubeconfig"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--node-labels=" + strings.Join([]string{
			"topology.kubernetes.io/zone=" + n.Zone,
			"topology.kubernetes.io/region=" + clusterName,
		}, ","),
		"--root-dir=/var/lib/kubelet",
	}, procOpts{env: noNetwork}); err != nil {
		return err
	}
	if err := c.startProcess(nodeProc(n, "kube-proxy"), c.bin("kube-proxy"), []string{
		"--config=" + c.nodeDir(n, "config", "kube-proxy.yaml"),
	}, procOpts{env: noNetwork}); err != nil {
		return err
	}
	provisioner := make(chan struct{})
	go func() { defer close(provisioner); c.runProvisioner(ctx, n) }()
	logf("node %s supervisor: containerd, kubelet and kube-proxy started", n.Name)
	<-ctx.Done()
	<-provisioner // it ends with ctx: nothing of the node outlives its supervisor
	return nil
}

// coverHostPaths bind-mounts the node's files over the sysctls kubelet checks and its directories over
// the host paths in shadowedDirs. The volatile ones start empty, as after a reboot.
func (c *cluster) coverHostPaths(n node) error {
	for name := range kernelDefaults {
		target := filepath.Join("/proc/sys", name)
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := syscall.Mount(c.nodeDir(n, "config", "sysctl", strings.ReplaceAll(name, "/", ".")), target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering %s: %w", target, err)
		}
	}
	if err := os.RemoveAll(c.nodeDir(n, "run")); err != nil {
		return err
	}
	for _, d := range shadowedDirs {
		flat := strings.ReplaceAll(strings.TrimPrefix(d.path, "/"), "/", "_")
		src := c.nodeDir(n, "shadow", flat)
		if d.volatile {
			src = c.nodeDir(n, "run", flat)
		}
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(d.path); os.IsNotExist(err) {
			// The mount needs a directory to cover; an empty one is all the host keeps (down removes it).
			if err := os.MkdirAll(d.path, 0o755); err != nil {
				return err
			}
			_ = os.WriteFile(c.path("created-"+flat), []byte(d.path), 0o644)
		}
		if err := syscall.Mount(src, d.path, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering %s: %w", d.path, err)
		}
	}
	// Bidirectional mount propagation (a CSI node plugin's mounts reaching kubelet and other pods) needs
	// kubelet's root to be a shared mount. Shared here makes a peer group of this namespace and its
	// containers only: the host's mounts were made private when the namespace was made, so nothing
	// propagates to the host.
	if err := syscall.Mount("", "/var/lib/kubelet", "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("making /var/lib/kubelet a shared mount: %w", err)
	}
	return nil
}

// importImages imports every image tarball in images/ into the node's containerd (k8s.io namespace).
func (c *cluster) importImages(ctx context.Context, n node) error {
	tars, _ := filepath.Glob(c.imagesDir() + "/*.tar")
	for _, tar := range tars {
		start := time.Now()
		if err := run(ctx, "ctr", "--address", c.containerdSock(n), "-n", "k8s.io", "images", "import", tar); err != nil {
			return err
		}
		logf("node %s: imported %s in %.1fs", n.Name, filepath.Base(tar), time.Since(start).Seconds())
	}
	return nil
}
