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
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/agent/mountapi"
	"github.com/pqcache/pqcache/internal/version"
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
	log, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(o.cacheRoot)
	if err != nil {
		return err
	}
	paths := csi.Paths{KubeletDir: o.kubeletDir}
	vols, err := csi.OpenVolumes(paths.VolumesDir())
	if err != nil {
		return err
	}
	n, err := vols.Restore(csi.BindMounter{})
	if err != nil {
		log.Warn("Some published volumes could not be held again", "error", err)
	}
	log.Info("Holding the generations of published volumes", "volumes", n)
	client := &mountapi.Client{Path: o.socket}
	reporter := &csi.InUseReporter{Volumes: vols, Client: client, Log: log}
	reg := &csi.Registration{Endpoint: paths.Socket(), Log: log}
	driver := &csi.Driver{Node: o.node, Locator: client, CacheRoot: root, OnChange: reporter.Notify,
		Mounter: csi.BindMounter{}, Volumes: vols, Version: version.Version, Log: log}
	srv := &csi.Server{Paths: paths, Driver: driver, Registration: reg, Log: log}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { reporter.Run(ctx) })
	wg.Go(func() { markRegistered(ctx, reg, registeredMarker(paths), log) })
	log.Info("Starting the agent's mount container", "version", version.Version, "node", o.node, "cacheRoot", root, "socket", o.socket)
	err = srv.Start(ctx)
	stop()
	wg.Wait()
	return err
}

// registeredMarker is the file whose presence says kubelet registered the driver: the mount
// container serves no HTTP, so its readiness probe (`agent mount probe`) reads this file.
func registeredMarker(p csi.Paths) string { return filepath.Join(p.PluginDir(), "registered") }

// markRegistered keeps the marker in step with the registration until ctx ends, then removes it.
func markRegistered(ctx context.Context, reg *csi.Registration, marker string, log *slog.Logger) {
	_ = os.Remove(marker) // an earlier container's marker says nothing about this one
	defer func() { _ = os.Remove(marker) }()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for marked := false; ; {
		if reg.Registered() && !marked {
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				log.Warn("Marking the driver registered", "error", err)
			} else {
				marked = true
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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
			paths := csi.Paths{KubeletDir: kubeletDir}
			if err := probeCSISocket(cmd.Context(), paths.Socket()); err != nil {
				return err
			}
			if _, err := os.Stat(registeredMarker(paths)); err != nil && !live {
				return fmt.Errorf("kubelet has not registered the CSI driver yet: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeletDir, "kubelet-dir", "/var/lib/kubelet", "kubelet's root directory.")
	cmd.Flags().BoolVar(&live, "live", false, "Check only that the CSI socket answers (the liveness probe).")
	return cmd
}

// probeCSISocket calls GetPluginInfo on the CSI socket, within 3 seconds.
func probeCSISocket(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", socket, err)
	}
	defer func() { _ = conn.Close() }() // a probe's connection; the call's error is the one to report
	if _, err := csipb.NewIdentityClient(conn).GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{}); err != nil {
		return fmt.Errorf("the CSI socket %s does not answer: %w", socket, err)
	}
	return nil
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

// addMountSocket answers the mount container (`pqcache agent mount`) from this agent: where each
// copy is, and what published volumes still show, which the pruner keeps.
func addMountSocket(mgr ctrl.Manager, a *agent.Agent, path string, log *slog.Logger) error {
	side := &csi.AgentSide{Node: a.Node, Reader: mgr.GetClient(), Copies: a.Copies}
	a.InUse = side.Dirs
	return mgr.Add(&mountapi.Server{Path: path, Handler: side, Log: log})
}
