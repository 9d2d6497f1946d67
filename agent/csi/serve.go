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
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerpb "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Paths are where the plugin's sockets and records go under kubelet's directory.
type Paths struct {
	// KubeletDir is kubelet's root directory, /var/lib/kubelet on most nodes.
	KubeletDir string
}

// PluginDir holds the CSI socket and the published volumes' records.
func (p Paths) PluginDir() string { return filepath.Join(p.KubeletDir, "plugins", DriverName) }

// Socket is the CSI endpoint kubelet calls.
func (p Paths) Socket() string { return filepath.Join(p.PluginDir(), "csi.sock") }

// VolumesDir holds a record per published volume.
func (p Paths) VolumesDir() string { return filepath.Join(p.PluginDir(), "volumes") }

// RegistrationSocket is where kubelet's plugin watcher finds the plugin.
func (p Paths) RegistrationSocket() string {
	return filepath.Join(p.KubeletDir, "plugins_registry", DriverName+"-reg.sock")
}

// Server serves the driver and its registration, as a manager runnable: it stops with the agent,
// and removes its registration socket so that kubelet unregisters the driver.
type Server struct {
	Paths        Paths
	Driver       *Driver
	Registration *Registration
	Log          *slog.Logger
}

// Start listens on both sockets, the CSI one first: kubelet calls it as soon as it registers.
func (s *Server) Start(ctx context.Context) error {
	csiSrv := grpc.NewServer(grpc.UnaryInterceptor(s.logErrors))
	csipb.RegisterIdentityServer(csiSrv, s.Driver)
	csipb.RegisterNodeServer(csiSrv, s.Driver)
	regSrv := grpc.NewServer()
	registerpb.RegisterRegistrationServer(regSrv, s.Registration)

	csiL, err := listenUnix(ctx, s.Paths.Socket())
	if err != nil {
		return err
	}
	regL, err := listenUnix(ctx, s.Paths.RegistrationSocket())
	if err != nil {
		_ = csiL.Close() // nothing served on it yet; the listen error is the one to report
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- csiSrv.Serve(csiL) }()
	go func() { errc <- regSrv.Serve(regL) }()
	s.Log.Info("Serving the CSI driver", "driver", DriverName, "socket", s.Paths.Socket(), "registration", s.Paths.RegistrationSocket())
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
		err = fmt.Errorf("serving the CSI driver: %w", err)
	}
	regSrv.Stop()
	_ = os.Remove(s.Paths.RegistrationSocket())
	csiSrv.GracefulStop()
	return err
}

// NeedLeaderElection is false: every node's agent serves its own node.
func (*Server) NeedLeaderElection() bool { return false }

// logErrors logs every failed call: kubelet shows the message on the pod, the operator reads it here.
func (s *Server) logErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		s.Log.Warn("CSI call failed", "method", info.FullMethod, "error", err)
	}
	return resp, err
}

// listenUnix listens on a Unix socket at path, replacing the socket an earlier agent left.
func listenUnix(ctx context.Context, path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing the old socket %s: %w", path, err)
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return l, nil
}
