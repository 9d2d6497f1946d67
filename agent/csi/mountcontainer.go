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

package csi

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
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pqcache/pqcache/agent/mountapi"
)

// MountContainer configures the privileged half of the split agent (`pqcache agent mount`): the CSI
// node plugin alone. It mounts and registers with kubelet, and reads nothing from the network: what a
// volume shows it asks the agent over a Unix socket, and confines the answer itself.
type MountContainer struct {
	// Node is the CSI node ID; CacheRoot the cache root as this container sees it (every mounted
	// generation must lie beneath it).
	Node, CacheRoot string
	// KubeletDir is kubelet's root, for the driver's sockets; Socket the agent's mount socket.
	KubeletDir, Socket string
	Version            string
	Log                *slog.Logger
}

// Run serves the CSI driver until ctx ends or the process is told to stop.
func (m MountContainer) Run(ctx context.Context) error {
	if m.Node == "" {
		return errors.New("the node's name is required")
	}
	root, err := filepath.Abs(m.CacheRoot)
	if err != nil {
		return err
	}
	paths := Paths{KubeletDir: m.KubeletDir}
	vols, err := OpenVolumes(paths.VolumesDir())
	if err != nil {
		return err
	}
	n, err := vols.Restore(BindMounter{})
	if err != nil {
		m.Log.Warn("Some published volumes could not be held again", "error", err)
	}
	m.Log.Info("Holding the generations of published volumes", "volumes", n)
	client := &mountapi.Client{Path: m.Socket}
	reporter := &InUseReporter{Volumes: vols, Client: client, Log: m.Log}
	reg := &Registration{Endpoint: paths.Socket(), Log: m.Log}
	driver := &Driver{Node: m.Node, Locator: client, CacheRoot: root, OnChange: reporter.Notify,
		Mounter: BindMounter{}, Volumes: vols, Version: m.Version, Log: m.Log}
	srv := &Server{Paths: paths, Driver: driver, Registration: reg, Log: m.Log}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { reporter.Run(ctx) })
	wg.Go(func() { markRegistered(ctx, reg, RegisteredMarker(paths), m.Log) })
	m.Log.Info("Starting the agent's mount container", "version", m.Version, "node", m.Node, "cacheRoot", root, "socket", m.Socket)
	err = srv.Start(ctx)
	stop()
	wg.Wait()
	return err
}

// RegisteredMarker is the file whose presence says kubelet registered the driver: the mount
// container serves no HTTP, so its readiness probe (`agent mount probe`) reads this file.
func RegisteredMarker(p Paths) string { return filepath.Join(p.PluginDir(), "registered") }

// markRegistered keeps the marker in step with the registration until ctx ends, then removes it.
func markRegistered(ctx context.Context, reg *Registration, marker string, log *slog.Logger) {
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

// Probe is the mount container's exec probe: the CSI socket answers GetPluginInfo within 3 seconds
// and, unless live, kubelet registered the driver.
func Probe(ctx context.Context, p Paths, live bool) error {
	if err := probeSocket(ctx, p.Socket()); err != nil {
		return err
	}
	if _, err := os.Stat(RegisteredMarker(p)); err != nil && !live {
		return fmt.Errorf("kubelet has not registered the CSI driver yet: %w", err)
	}
	return nil
}

// probeSocket calls GetPluginInfo on the CSI socket, within 3 seconds.
func probeSocket(ctx context.Context, socket string) error {
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
