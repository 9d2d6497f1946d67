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

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/agent/mountapi"
	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Config is a node agent's configuration, as `pqcache agent`'s flags give it.
type Config struct {
	// Version is logged at start and reported by the CSI driver.
	Version string
	// Scheme knows Kubernetes' kinds and pqcache's.
	Scheme *runtime.Scheme
	// Node is this node's name; CacheRoot the directory on its disk that holds the copies.
	Node, CacheRoot string
	// PeerListen is the peer endpoint's listen address; PeerEndpoint the URL other agents reach it
	// at ("": https:// and $POD_IP with the port listened on).
	PeerListen, PeerEndpoint string
	// MetricsAddr ("0": none) and ProbeAddr are the addresses of the metrics endpoint and the probes.
	MetricsAddr, ProbeAddr string
	// Parallelism is the GETs in flight across every sync on this node.
	Parallelism int
	// NodeReserve is the free space on the cache root no sync takes, in bytes (0: none).
	NodeReserve int64
	// CSI serves the CSI driver from this process, registered with the kubelet whose root is
	// KubeletDir; MountSocket instead answers the privileged mount container on a Unix socket.
	CSI         bool
	KubeletDir  string
	MountSocket string
	// PeerTokenFile is this agent's projected token sent to peers; PeerCA the ConfigMap of the peer
	// CA; PeerServiceAccount the only identity this agent serves peers to.
	PeerTokenFile      string
	PeerCA             types.NamespacedName
	PeerServiceAccount types.NamespacedName
	// AmbientNamespaces may read their buckets with the agent's own identity; Guard refuses the
	// denied endpoint addresses to requests to buckets (nil: none).
	AmbientNamespaces []string
	Guard             *s3store.DialGuard
	// Readers configures the S3 endpoint for the pods of this node (a zero Listen: none).
	Readers ReadersConfig
	Log     *slog.Logger
}

// Run runs the node agent until ctx ends: its node's copies, the peer endpoint, and the CSI driver
// or the mount container's socket.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Node == "" {
		return errors.New("the node's name is required")
	}
	if cfg.CSI && cfg.MountSocket != "" {
		return errors.New("the CSI driver runs here or in the mount container, not both")
	}
	copies, err := OpenCopies(cfg.CacheRoot)
	if err != nil {
		return err
	}
	// The lock file holds no data: closing it only releases the cache root, as the process's exit would.
	defer func() { _ = copies.Close() }()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.PeerListen)
	if err != nil {
		return fmt.Errorf("listening for peers on %s: %w", cfg.PeerListen, err)
	}
	endpoint, err := peerEndpoint(cfg.PeerEndpoint, l.Addr())
	if err != nil {
		return err
	}
	mgr, err := newManager(cfg)
	if err != nil {
		return err
	}
	sec, err := newPeerSecurity(mgr, cfg)
	if err != nil {
		return err
	}
	a := &Agent{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: cfg.Node, Endpoint: endpoint, PeerAuth: sec.client,
		Copies: copies, Budget: NewBudget(cfg.Parallelism), Reserve: cfg.NodeReserve, Log: cfg.Log, AmbientNamespaces: cfg.AmbientNamespaces}
	if cfg.Guard != nil {
		// Peers, at pod and node addresses, are not buckets and keep their own client.
		a.BucketHTTP = cfg.Guard.Guard(s3store.NewHTTPClient(s3store.DefaultClientTimeouts))
	}
	if err := addMountSide(mgr, a, cfg); err != nil {
		return err
	}
	if err := a.SetupWithManager(mgr); err != nil {
		return err
	}
	srv := &peer.Server{Auth: sec.auth, Authorize: (&PeerAuthorizer{Reader: mgr.GetAPIReader()}).Authorize, Roots: copies.Lookup, Log: cfg.Log}
	if err := mgr.Add(PeerServer{Listener: l, Server: srv, TLS: sec.serverTLS}); err != nil {
		return err
	}
	if err := addReadersEndpoint(ctx, mgr, a, cfg, sec); err != nil {
		return err
	}
	cfg.Log.Info("Starting the node agent", "version", cfg.Version, "node", cfg.Node, "cacheRoot", cfg.CacheRoot, "peerEndpoint", endpoint)
	return mgr.Start(ctx)
}

// newManager is the agent's controller-runtime manager: its cache holds this node's objects only.
func newManager(cfg Config) (ctrl.Manager, error) {
	rest, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(rest, ctrl.Options{Scheme: cfg.Scheme, Cache: CacheOptions(cfg.Node),
		Metrics: metricsserver.Options{BindAddress: cfg.MetricsAddr}, HealthProbeBindAddress: cfg.ProbeAddr})
	if err != nil {
		return nil, fmt.Errorf("creating the agent's manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// peerEndpoint is the URL other agents use: the one given, else the pod's IP and the port listened on.
func peerEndpoint(given string, addr net.Addr) (string, error) {
	if given != "" {
		return given, nil
	}
	ip := os.Getenv("POD_IP")
	if ip == "" {
		return "", errors.New("the peer endpoint (or POD_IP) is required: other nodes must reach this agent")
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(ip, port), nil
}

// addMountSide adds what mounts this node's copies into pods: the CSI driver itself, or the socket
// that answers the privileged mount container, or neither.
func addMountSide(mgr ctrl.Manager, a *Agent, cfg Config) error {
	switch {
	case cfg.CSI:
		return addCSIDriver(mgr, a, cfg)
	case cfg.MountSocket != "":
		// The mount container asks where each copy is, and tells what published volumes still show,
		// which the pruner keeps.
		side := &csi.AgentSide{Node: a.Node, Reader: mgr.GetClient(), Copies: a.Copies}
		a.InUse = side.Dirs
		return mgr.Add(&mountapi.Server{Path: cfg.MountSocket, Handler: side, Log: cfg.Log})
	}
	return nil
}

// addCSIDriver adds the CSI node plugin to the agent. It first takes again the generations of the
// volumes an earlier agent published, before any sync of this one can collect them.
func addCSIDriver(mgr ctrl.Manager, a *Agent, cfg Config) error {
	paths := csi.Paths{KubeletDir: cfg.KubeletDir}
	vols, err := csi.OpenVolumes(paths.VolumesDir())
	if err != nil {
		return err
	}
	n, err := vols.Restore(csi.BindMounter{})
	if err != nil {
		cfg.Log.Warn("Some published volumes could not be held again", "error", err)
	}
	cfg.Log.Info("Holding the generations of published volumes", "volumes", n)
	a.InUse = vols.Dirs
	reg := &csi.Registration{Endpoint: paths.Socket(), Log: cfg.Log}
	driver := &csi.Driver{Node: cfg.Node, Reader: mgr.GetClient(), Copies: a.Copies, Mounter: csi.BindMounter{},
		Volumes: vols, Version: cfg.Version, Log: cfg.Log}
	if err := mgr.Add(&csi.Server{Paths: paths, Driver: driver, Registration: reg, Log: cfg.Log}); err != nil {
		return err
	}
	// Ready once kubelet registered the driver: a rollout of the agent waits for each node's kubelet.
	return mgr.AddReadyzCheck("csi-registered", func(*http.Request) error {
		if !reg.Registered() {
			return errors.New("kubelet has not registered the CSI driver yet")
		}
		return nil
	})
}

// addReadersEndpoint serves this node's copies to the pods beside it, when cfg.Readers asks, on
// the peer certificate (which also names the readers' Service). What its sessions read is in use:
// the pruner keeps it.
func addReadersEndpoint(ctx context.Context, mgr ctrl.Manager, a *Agent, cfg Config, sec *peerSecurity) error {
	if cfg.Readers.Listen == "" {
		return nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Readers.Listen)
	if err != nil {
		return fmt.Errorf("listening for readers on %s: %w", cfg.Readers.Listen, err)
	}
	srv, err := newReadersServer(mgr.GetAPIReader(), mgr.GetClient(), a.Copies, cfg.Node, cfg.Readers, cfg.Log.With("component", "readers"))
	if err != nil {
		return err
	}
	a.InUse = inUseByEither(a.InUse, srv.Sessions.Roots)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		srv.Sessions.Run(ctx, 30*time.Second)
		return nil
	})); err != nil {
		return err
	}
	return mgr.Add(PeerServer{Listener: l, Server: srv, TLS: sec.serverTLS})
}

// inUseByEither is the union of two InUse functions; unknown (nil) if the first does not know yet.
func inUseByEither(first, second func() map[string]bool) func() map[string]bool {
	if first == nil {
		return second
	}
	return func() map[string]bool {
		keep := first()
		if keep == nil {
			return nil
		}
		for dir := range second() {
			keep[dir] = true
		}
		return keep
	}
}
