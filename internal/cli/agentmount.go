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

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/internal/version"
	"github.com/pqcache/pqcache/worker"
)

// defaultMountSocket is where the agent listens for its mount container, in an emptyDir the two
// containers of the agent's pod share.
const defaultMountSocket = "/run/pqcache/mount.sock"

// mountOptions are the flags of `pqcache agent mount`, the privileged half of the split agent.
type mountOptions struct {
	node, cacheRoot, kubeletDir, socket, logLevel string
}

// newAgentMountCommand is the chart's mount container: the CSI node plugin alone. It mounts and
// registers with kubelet, and reads nothing from the network: what a volume shows it asks the
// agent (`pqcache agent --mount-socket`) over a Unix socket, and confines the answer itself.
func newAgentMountCommand() *cobra.Command {
	var o mountOptions
	cmd := &cobra.Command{
		Use:   "mount",
		Short: "Run the agent's privileged half: the " + csi.DriverName + " CSI node plugin, asking the agent over --socket",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runAgentMount(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.node, "node-name", os.Getenv("NODE_NAME"), "This node's name, the CSI node ID.")
	f.StringVar(&o.cacheRoot, "cache-root", "/var/lib/pqcache", "The cache root as this container sees it: every mounted generation must lie beneath it.")
	f.StringVar(&o.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "kubelet's root directory, for the CSI driver's sockets.")
	f.StringVar(&o.socket, "socket", defaultMountSocket, "The agent's mount socket.")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error.")
	cmd.AddCommand(newAgentMountProbeCommand())
	return cmd
}

func runAgentMount(ctx context.Context, o mountOptions) error {
	if o.node == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	log, err := worker.NewLogger(o.logLevel)
	if err != nil {
		return err
	}
	return csi.MountContainer{Node: o.node, CacheRoot: o.cacheRoot, KubeletDir: o.kubeletDir, Socket: o.socket,
		Version: version.Version, Log: log}.Run(ctx)
}

// newAgentMountProbeCommand is the mount container's exec probe: the CSI socket answers, and (unless
// --live) kubelet registered the driver.
func newAgentMountProbeCommand() *cobra.Command {
	var kubeletDir string
	var live bool
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Exit 0 when the mount container's CSI socket answers and kubelet registered the driver",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return csi.Probe(cmd.Context(), csi.Paths{KubeletDir: kubeletDir}, live)
		},
	}
	cmd.Flags().StringVar(&kubeletDir, "kubelet-dir", "/var/lib/kubelet", "kubelet's root directory.")
	cmd.Flags().BoolVar(&live, "live", false, "Check only that the CSI socket answers (the liveness probe).")
	return cmd
}

// newAgentChownCommand is the chart's init container: it gives the cache root to the agent's user,
// once (agent.ChownCache says how it stays safe and cheap on every start).
func newAgentChownCommand() *cobra.Command {
	var root string
	var uid, gid int
	cmd := &cobra.Command{
		Use:   "chown-cache",
		Short: "Give the cache root and what it holds to the agent's user (the chart's init container, root with CAP_CHOWN only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := agent.ChownCache(root, uid, gid)
			fmt.Fprintf(cmd.OutOrStdout(), "changed the owner of %d entries under %s to %d:%d\n", n, root, uid, gid)
			return err
		},
	}
	cmd.Flags().StringVar(&root, "cache-root", "/var/lib/pqcache", "The cache root.")
	cmd.Flags().IntVar(&uid, "uid", 65532, "The agent's user.")
	cmd.Flags().IntVar(&gid, "gid", 65532, "The agent's group.")
	return cmd
}
