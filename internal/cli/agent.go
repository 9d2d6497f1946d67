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
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/csi"
	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
	"github.com/pqcache/pqcache/agent/readers"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/manager"
	"github.com/pqcache/pqcache/internal/s3creds"
	"github.com/pqcache/pqcache/internal/version"
	"github.com/pqcache/pqcache/worker"
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
	// mountSocket answers the chart's mount container (`agent mount`) instead of serving CSI here.
	mountSocket string
	// peerTokenFile, peerCA and peerServiceAccount: the agent's identity to peers.
	peerTokenFile, peerCA, peerServiceAccount string
	// access is whose identity reads a bucket and which endpoint addresses are denied.
	access accessFlags
	// readers configures the S3 endpoint for the node's pods.
	readers readersFlags
}

// readersFlags are the flags of the agent's S3 endpoint for readers.
type readersFlags struct {
	listen, service, masterKey, clusterDomain, clientCheck string
	epoch, idle, maxHold                                   time.Duration
}

func (r *readersFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&r.listen, "readers-listen", "", "Address the S3 endpoint for this node's pods listens on (TLS, with the peer certificate); empty: none.")
	f.StringVar(&r.service, "readers-service", "", "NAMESPACE/NAME of the Service pods reach the endpoint through; the agent's certificate names it.")
	f.StringVar(&r.masterKey, "readers-master-key", "", "NAMESPACE/NAME of the Secret the readers' keys derive from (the manager makes it).")
	f.StringVar(&r.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain, in the readers' Service's full name.")
	f.StringVar(&r.clientCheck, "readers-client-check", "node", "node: serve only this node's pods (its spec.podCIDRs) and addresses; none: anyone who reaches the port (CNIs without node pod CIDRs).")
	f.DurationVar(&r.epoch, "readers-key-epoch", s3creds.DefaultEpochs.Length, "How often the readers' keys turn: the manager's --readers-key-epoch.")
	f.DurationVar(&r.idle, "readers-idle", readers.DefaultIdle, "A reader's session, and the generations it reads, end after this long without a request.")
	f.DurationVar(&r.maxHold, "readers-max-hold", readers.DefaultMaxHold, "A reader's session ends this long after it began, so that it moves on to newer data.")
}

// config is the agent's ReadersConfig that the flags give.
func (r readersFlags) config() (agent.ReadersConfig, error) {
	if r.listen == "" {
		return agent.ReadersConfig{}, nil
	}
	c := agent.ReadersConfig{Listen: r.listen, Epochs: s3creds.Epochs{Length: r.epoch, Skew: s3creds.DefaultEpochs.Skew},
		Idle: r.idle, MaxHold: r.maxHold, ClientCheck: r.clientCheck}
	var err error
	if c.Service, err = namespacedName("--readers-service", r.service); err != nil {
		return c, err
	}
	if c.MasterKey, err = namespacedName("--readers-master-key", r.masterKey); err != nil {
		return c, err
	}
	c.ServiceNames = peertls.ServiceDNSNames(c.Service.Namespace, c.Service.Name, r.clusterDomain)
	return c, nil
}

func newAgentCommand() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: keep this node's copies of Datasets with spec.replicas, and serve them to other nodes",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return runAgent(o) },
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
	o.readers.bind(f)
	return cmd
}

func runAgent(o agentOptions) error {
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
	caMap, err := namespacedName("--peer-ca-configmap", o.peerCA)
	if err != nil {
		return err
	}
	sa, err := namespacedName("--peer-service-account", o.peerServiceAccount)
	if err != nil {
		return err
	}
	guard, err := o.access.guard()
	if err != nil {
		return err
	}
	readersCfg, err := o.readers.config()
	if err != nil {
		return err
	}
	log, err := worker.NewLogger(o.logLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler())) // one log, one format: the agent's
	return agent.Run(ctrl.SetupSignalHandler(), agent.Config{Version: version.Version, Scheme: manager.NewScheme(), Node: o.node,
		CacheRoot: o.cacheRoot, PeerListen: o.listen, PeerEndpoint: o.endpoint, MetricsAddr: o.metricsAddr, ProbeAddr: o.probeAddr,
		Parallelism: o.parallelism, NodeReserve: reserve, CSI: o.csi, KubeletDir: o.kubeletDir, MountSocket: o.mountSocket,
		PeerTokenFile: o.peerTokenFile, PeerCA: caMap, PeerServiceAccount: sa, AmbientNamespaces: o.access.ambientNamespaces,
		Guard: guard, Readers: readersCfg, Log: log})
}
