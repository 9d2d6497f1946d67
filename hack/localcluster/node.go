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
	"os/exec"
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
// how they are configured. Inside the node's mount namespace each is covered by a directory under the
// cluster directory, so their files land there and vanish with it.
var shadowedDirs = []string{
	"/run/containerd",     // shim sockets
	"/run/netns",          // pod network namespaces
	"/var/lib/cni",        // CNI result cache
	"/var/log/containers", // kubelet's log symlinks
	"/var/lib/kubelet",    // device-plugin and pod-resources sockets
}

// writeNodeConfig writes containerd's, the CNI network's and kubelet's configuration.
func (c *cluster) writeNodeConfig() error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volumes", "node/sysctl"} {
		if err := os.MkdirAll(c.path(d), 0o755); err != nil {
			return err
		}
	}
	containerd := fmt.Sprintf(`# containerd for the pqcache local cluster: everything under %[1]s.
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
`, c.dir, c.path("containerd", "root"), c.path("containerd", "state"), c.containerdSock(),
		c.path("containerd", "opt"), pauseImage, c.path("cni", "net.d"))
	if err := os.WriteFile(c.path("containerd", "config.toml"), []byte(containerd), 0o644); err != nil {
		return err
	}

	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "rangeStart": %q}]], "dataDir": %q}
    }
  ]
}
`, clusterName, bridgeName, podSubnet, podRangeStart, c.path("cni", "ipam"))
	if err := os.WriteFile(c.path("cni", "net.d", "10-pqcache-local.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}

	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %[1]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[2]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[3]q}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://%[4]s
cgroupDriver: cgroupfs
cgroupRoot: /%[5]s
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: true
makeIPTablesUtilChains: false
oomScoreAdj: 0
podLogsDir: %[6]q
resolvConf: %[7]q
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
serializeImagePulls: false
maxPods: 110
`, kubeletPort, kubeletHealthz, c.path("pki", "ca.crt"), c.containerdSock(), cgroupRoot,
		c.path("pod-logs"), c.path("node", "resolv.conf"))
	if err := os.WriteFile(c.path("kubelet", "config.yaml"), []byte(kubelet), 0o644); err != nil {
		return err
	}
	// Pods get no name servers: nothing outside the bridge is reachable from them anyway.
	if err := os.WriteFile(c.path("node", "resolv.conf"), []byte("# no name servers on the pqcache local cluster\n"), 0o644); err != nil {
		return err
	}
	for name, value := range kernelDefaults {
		if err := os.WriteFile(c.path("node", "sysctl", strings.ReplaceAll(name, "/", ".")), []byte(value+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cgroupControllers lists the cgroup v1 hierarchies mounted under /sys/fs/cgroup (and the v2 one, where
// kubelet also keeps a tree on a hybrid host).
func cgroupControllers() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", e.Name(), "cgroup.procs")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// makeCgroupRoot creates /pqcache-local in every hierarchy: kubelet refuses a cgroupRoot that does not
// exist. A new cpuset cgroup starts with no CPUs and no memory nodes, so it gets its parent's.
func makeCgroupRoot() error {
	for _, ctl := range cgroupControllers() {
		dir := filepath.Join("/sys/fs/cgroup", ctl, cgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if ctl == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("setting %s/%s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// startNode starts the node supervisor (runNode) in a private mount namespace and waits until kubelet
// has registered the node and reports it Ready.
func (c *cluster) startNode(ctx context.Context) error {
	done := step("starting containerd and kubelet in a private mount namespace")
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	if err := makeBridge(ctx); err != nil {
		return err
	}
	if err := c.startProcess("node", c.self, []string{"node"}, nil, syscall.CLONE_NEWNS); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "node "+nodeName+" Ready", "node", 3*time.Minute, c.nodeReady); err != nil {
		return err
	}
	done()
	return nil
}

// runNode is the node supervisor. It runs in its own mount namespace (made private by startProcess, so
// nothing it mounts reaches the host), covers the paths in kernelDefaults and shadowedDirs, starts containerd,
// imports the images, starts kubelet and the volume provisioner, and waits for SIGTERM.
func (c *cluster) runNode(ctx context.Context) error {
	logf("node supervisor %d: preparing the mount namespace", os.Getpid())
	for name := range kernelDefaults {
		target := filepath.Join("/proc/sys", name)
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := syscall.Mount(c.path("node", "sysctl", strings.ReplaceAll(name, "/", ".")), target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering %s: %w", target, err)
		}
	}
	for _, target := range shadowedDirs {
		src := c.path("node", "shadow", strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "_"))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(target); os.IsNotExist(err) {
			// The mount needs a directory to cover; an empty one is all the host keeps (down removes it).
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			_ = os.WriteFile(c.path("node", "created-"+strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "_")), []byte(target), 0o644)
		}
		if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering %s: %w", target, err)
		}
	}

	// Pulls have nowhere to go: the images the cluster needs are imported, and an image that is missing
	// should fail fast instead of reaching for a registry.
	noNetwork := []string{"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy="}
	if err := c.startProcess("containerd", "/usr/bin/containerd", []string{"--config", c.path("containerd", "config.toml")}, noNetwork, 0); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd socket", "containerd", 30*time.Second, func(context.Context) error {
		conn, err := net.Dial("unix", c.containerdSock())
		if err == nil {
			conn.Close()
		}
		return err
	}); err != nil {
		return err
	}
	if err := c.importImages(ctx); err != nil {
		return err
	}
	if err := c.startProcess("kubelet", c.bin("kubelet"), []string{
		"--config=" + c.path("kubelet", "config.yaml"),
		"--kubeconfig=" + c.path("pki", "kubelet.kubeconfig"),
		"--hostname-override=" + nodeName,
		"--node-ip=127.0.0.1",
		"--root-dir=" + c.path("kubelet"),
		"--cert-dir=" + c.path("kubelet", "pki"),
	}, noNetwork, 0); err != nil {
		return err
	}
	go c.runProvisioner(ctx)
	logf("node supervisor: containerd and kubelet started")
	<-ctx.Done()
	return nil
}

// importImages imports every image tarball in images/ into containerd's k8s.io namespace.
func (c *cluster) importImages(ctx context.Context) error {
	tars, _ := filepath.Glob(c.imagesDir() + "/*.tar")
	for _, tar := range tars {
		start := time.Now()
		if err := run(ctx, "ctr", "--address", c.containerdSock(), "-n", "k8s.io", "images", "import", tar); err != nil {
			return err
		}
		logf("imported %s in %.1fs", filepath.Base(tar), time.Since(start).Seconds())
	}
	return nil
}

// makeBridge creates the pods' bridge with its one address before CNI would create it bare, so that
// the manager (in the host's network namespace) and pods can reach each other on it. It routes
// nothing: pods get no gateway, and no sysctl or iptables rule changes.
func makeBridge(ctx context.Context) error {
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err != nil {
		if err := run(ctx, "ip", "link", "add", bridgeName, "type", "bridge"); err != nil {
			return fmt.Errorf("creating the bridge %s: %w", bridgeName, err)
		}
	}
	// A bridge without an address of its own takes the lowest MAC of its ports, and so changes MAC as
	// pods come and go: pods then send to the host's bridge address at a MAC that is gone until their
	// ARP entry expires (about 10 s of lost webhook posts each time a sync pod starts or ends). A
	// fixed, locally administered MAC keeps it still.
	if mac, _ := os.ReadFile("/sys/class/net/" + bridgeName + "/address"); strings.TrimSpace(string(mac)) != bridgeMAC {
		if err := run(ctx, "ip", "link", "set", bridgeName, "address", bridgeMAC); err != nil {
			return fmt.Errorf("fixing the MAC address of the bridge %s: %w", bridgeName, err)
		}
	}
	if out, _ := exec.CommandContext(ctx, "ip", "-4", "addr", "show", "dev", bridgeName).Output(); !strings.Contains(string(out), bridgeIP+"/") {
		if err := run(ctx, "ip", "addr", "add", bridgeIP+"/24", "dev", bridgeName); err != nil {
			return fmt.Errorf("giving the bridge %s its address: %w", bridgeName, err)
		}
	}
	return run(ctx, "ip", "link", "set", bridgeName, "up")
}
