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
	"net"
	"net/http"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/internal/version"
)

// defaultNodeReserve is --node-reserve's default, and the chart's agent.nodeReserve: kubelet's own
// default eviction threshold is 10% of the node's filesystem, and 10Gi keeps a node whose root is the
// cache root's usable when pqcache's copies would otherwise fill it.
const defaultNodeReserve = "10Gi"

// agentOptions are the flags of `pqcache agent`.
type agentOptions struct {
	node, cacheRoot, listen, endpoint string
	metricsAddr, probeAddr            string
	parallelism                       int
	logLevel                          string
	// nodeReserve is free space on the cache root no sync takes, as a size ("10Gi").
	nodeReserve string
	// csi serves the data.pqcache.dev CSI driver, registered with the kubelet whose root is kubeletDir.
	csi        bool
	kubeletDir string
	// mountSocket answers the chart's mount container (agentmount.go) instead of serving CSI here.
	mountSocket string
	// peerTokenFile, peerCA and peerServiceAccount: the agent's identity to peers (agentpeer.go).
	peerTokenFile, peerCA, peerServiceAccount string
	// access is whose identity reads a bucket and which endpoint addresses are denied.
	access accessFlags
}

func newAgentCommand() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: keep this node's copies of Datasets with spec.replicas, and serve them to other nodes",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runAgent(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.node, "node-name", os.Getenv("NODE_NAME"), "This node's name (the DaemonSet passes spec.nodeName as NODE_NAME).")
	f.StringVar(&o.cacheRoot, "cache-root", "/var/lib/pqcache", "Directory on the node's disk that holds the copies.")
	f.StringVar(&o.listen, "peer-listen", ":7480", "Address the peer endpoint listens on.")
	f.StringVar(&o.endpoint, "peer-endpoint", "", "URL other agents reach the peer endpoint at (default https://$POD_IP plus the --peer-listen port).")
	f.IntVar(&o.parallelism, "parallelism", 16, "GETs in flight across every sync on this node (the node's budget).")
	f.StringVar(&o.nodeReserve, "node-reserve", defaultNodeReserve, "Free space on the cache root's filesystem that no sync takes, for the node's own use (kubelet, images, logs): a sync that would leave less fails with reason NodeReserve. A size such as 10Gi; 0 turns it off.")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error.")
	f.BoolVar(&o.csi, "csi", false, "Serve the "+csi.DriverName+" CSI driver, so that pods mount this node's copies (needs a privileged pod with kubelet's directory mounted Bidirectional at the same path).")
	f.StringVar(&o.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "kubelet's root directory, for the CSI driver's sockets.")
	f.StringVar(&o.mountSocket, "mount-socket", "", "Answer the privileged mount container (pqcache agent mount) on this Unix socket; the split the chart runs, instead of --csi.")
	cmd.AddCommand(newAgentMountCommand(), newAgentChownCommand())
	f.StringVar(&o.peerTokenFile, "peer-token-file", "/var/run/secrets/pqcache/peer/token", "This agent's projected ServiceAccount token with audience "+identity.Audience+", sent with each request to a peer (kubelet rotates it).")
	f.StringVar(&o.peerCA, "peer-ca-configmap", "", "NAMESPACE/NAME of the ConfigMap with the peer CA (key "+peertls.CAKey+"), which the manager publishes.")
	f.StringVar(&o.peerServiceAccount, "peer-service-account", "", "NAMESPACE/NAME of the agents' ServiceAccount: the only identity this agent serves peers to.")
	o.access.bind(f)
	return cmd
}

func runAgent(ctx context.Context, o agentOptions) error {
	if o.node == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	if o.csi && o.mountSocket != "" {
		return errors.New("--csi and --mount-socket exclude each other: the driver runs here or in the mount container")
	}
	reserve, err := wire.ParseSize(o.nodeReserve)
	if err != nil {
		return fmt.Errorf("--node-reserve: %w", err)
	}
	log, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler())) // one log, one format: the agent's
	copies, err := agent.OpenCopies(o.cacheRoot)
	if err != nil {
		return err
	}
	// The lock file holds no data: closing it only releases the cache root, as the process's exit would.
	defer func() { _ = copies.Close() }()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--peer-listen: %w", err)
	}
	endpoint, err := peerEndpoint(o.endpoint, l.Addr())
	if err != nil {
		return err
	}
	mgr, err := newAgentManager(o)
	if err != nil {
		return err
	}
	sec, err := newPeerSecurity(mgr, o, log)
	if err != nil {
		return err
	}
	a := &agent.Agent{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: o.node, Endpoint: endpoint, PeerAuth: sec.client,
		Copies: copies, Budget: agent.NewBudget(o.parallelism), Reserve: reserve, Log: log, AmbientNamespaces: o.access.ambientNamespaces}
	if err := guardBuckets(a, o.access); err != nil {
		return err
	}
	switch {
	case o.csi:
		if err := addCSIDriver(mgr, a, o, log); err != nil {
			return err
		}
	case o.mountSocket != "":
		if err := addMountSocket(mgr, a, o.mountSocket, log); err != nil {
			return err
		}
	}
	if err := a.SetupWithManager(mgr); err != nil {
		return err
	}
	srv := &peer.Server{Auth: sec.auth, Authorize: (&agent.PeerAuthorizer{Reader: mgr.GetAPIReader()}).Authorize, Roots: copies.Lookup, Log: log}
	if err := mgr.Add(agent.PeerServer{Listener: l, Server: srv, TLS: sec.serverTLS}); err != nil {
		return err
	}
	log.Info("Starting the node agent", "version", version.Version, "node", o.node, "cacheRoot", o.cacheRoot, "peerEndpoint", endpoint)
	return mgr.Start(ctrl.SetupSignalHandler())
}

func newAgentManager(o agentOptions) (ctrl.Manager, error) {
	scheme := newScheme()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: agent.CacheOptions(o.node),
		Metrics: metricsserver.Options{BindAddress: o.metricsAddr}, HealthProbeBindAddress: o.probeAddr})
	if err != nil {
		return nil, fmt.Errorf("creating the agent's manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, mgr.AddReadyzCheck("readyz", healthz.Ping)
}

// peerEndpoint is the URL other agents use: the flag, else the pod's IP and the port listened on.
func peerEndpoint(flag string, addr net.Addr) (string, error) {
	if flag != "" {
		return flag, nil
	}
	ip := os.Getenv("POD_IP")
	if ip == "" {
		return "", errors.New("--peer-endpoint (or POD_IP) is required: other nodes must reach this agent")
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(ip, port), nil
}

// addCSIDriver adds the CSI node plugin to the agent. It first takes again the generations of the
// volumes an earlier agent published, before any sync of this one can collect them.
func addCSIDriver(mgr ctrl.Manager, a *agent.Agent, o agentOptions, log *slog.Logger) error {
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
	a.InUse = vols.Dirs
	reg := &csi.Registration{Endpoint: paths.Socket(), Log: log}
	driver := &csi.Driver{Node: o.node, Reader: mgr.GetClient(), Copies: a.Copies, Mounter: csi.BindMounter{},
		Volumes: vols, Version: version.Version, Log: log}
	if err := mgr.Add(&csi.Server{Paths: paths, Driver: driver, Registration: reg, Log: log}); err != nil {
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

// guardBuckets sends the agent's requests to buckets through a client that refuses the denied
// endpoint addresses (peers, at pod and node addresses, are not buckets and keep their own client).
func guardBuckets(a *agent.Agent, access accessFlags) error {
	g, err := access.guard()
	if err != nil || g == nil {
		return err
	}
	a.BucketHTTP = g.Guard(s3store.NewHTTPClient(s3store.DefaultClientTimeouts))
	return nil
}
