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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/pqcache/pqcache/agent/peer/peertls"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/manager"
	"github.com/pqcache/pqcache/internal/s3creds"
	"github.com/pqcache/pqcache/internal/version"
)

// managerOptions are the flags of `pqcache manager`.
type managerOptions struct {
	metricsAddr            string
	probeAddr              string
	leaderElect            bool
	leaderElectionID       string
	leaderElectionNS       string
	workerImage            string
	polarsImage            string
	sparkImage             string
	eventsAddr             string
	eventsQueryToken       bool
	maxConcurrentSyncs     int
	syncJobTTL             time.Duration
	workerServiceAccount   string
	maxConcurrentBenchJobs int
	pricesFile             string
	maxBenchJobsPerNode    int
	watchNamespaces        []string
	workerResources        string
	workerCABundle         string
	kubeAPIQPS             float32
	kubeAPIBurst           int
	localityWebhookPort    int
	webhookCertDir         string
	webhookCertSecret      string
	webhookService         string
	webhookConfiguration   string
	agentNamespace         string
	agentSelector          string
	peerCA, peerAgentSA    string
	readersService         string
	readersMasterKey       string
	clusterDomain          string
	readersKeyEpoch        time.Duration
	agentServiceAccount    string
	access                 accessFlags
	zap                    zap.Options
}

func newManagerCommand() *cobra.Command {
	opts := managerOptions{zap: zap.Options{Development: false}}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the operator: reconcile Datasets and BenchRuns",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runManager(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	f.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	f.BoolVar(&opts.leaderElect, "leader-elect", false, "Elect a leader among replicas, so that only one reconciles at a time.")
	f.StringVar(&opts.leaderElectionID, "leader-election-id", "pqcache.data.pqcache.dev", "Name of the Lease used for leader election.")
	f.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; empty uses the pod's namespace.")
	f.StringVar(&opts.workerImage, "worker-image", "pqcache:"+version.Version, "Image of the worker Jobs that run `pqcache sync` (by default the operator's own).")
	f.StringVar(&opts.polarsImage, "polars-image", "pqcache-polars:"+version.Version, "Image of BenchRuns' polars engine: Python Polars and pqcache's Polars program (the runner is injected from --worker-image).")
	f.StringVar(&opts.sparkImage, "spark-image", "pqcache-spark:"+version.Version, "Image of BenchRuns' spark engine, its driver and executors: a JRE, PySpark and pqcache's Spark programs (the runner is injected into the driver from --worker-image).")
	f.StringVar(&opts.eventsAddr, "events-bind-address", ":8082", "Address of the endpoint stores post S3 event notifications to (POST /events/NAMESPACE/NAME); \"0\" disables it (SQS sources still run).")
	f.BoolVar(&opts.eventsQueryToken, "events-query-token", false, "Also take a Dataset's webhook token from the query string (?token=TOKEN), for stores that cannot send an Authorization header (versitygw). Off by default: access logs keep URLs, and the token with them.")
	f.IntVar(&opts.maxConcurrentSyncs, "max-concurrent-syncs", 10, "Sync Jobs allowed to run at once across the cluster; Datasets waiting longest go first. 0 means no cap.")
	f.IntVar(&opts.maxConcurrentBenchJobs, "max-concurrent-bench-jobs", 4, "Bench Jobs allowed to run at once across the cluster; the longest-waiting start first. 0 means no cap.")
	f.StringVar(&opts.pricesFile, "prices-file", "", "YAML file of the prices BenchRuns are costed with where their spec.pricing gives none (docs/benchruns.md); read again when it changes. Empty: the built-in AWS us-east-1 list prices.")
	f.IntVar(&opts.maxBenchJobsPerNode, "max-bench-jobs-per-node", 1, "Bench Jobs allowed to run at once on one node (two on one node move each other's times); the longest-waiting start first. 0 means no cap.")
	f.DurationVar(&opts.syncJobTTL, "sync-job-ttl", time.Hour, "How long finished worker Jobs (and their pods, whose termination messages carry the reports) are kept; at least 1m.")
	f.StringVar(&opts.workerResources, "worker-resources", "", `Resources of worker containers whose Dataset sets none, as JSON: {"requests":{"cpu":"250m"},"limits":{"memory":"1Gi"}}.`)
	f.StringVar(&opts.workerCABundle, "worker-ca-bundle", "", "CONFIGMAP/KEY holding CA certificates for an S3-compatible store with a private CA; the ConfigMap must exist in each Dataset namespace.")
	f.StringSliceVar(&opts.watchNamespaces, "watch-namespaces", nil, "Namespaces whose Datasets and BenchRuns to reconcile (comma-separated); empty means all.")
	f.StringVar(&opts.workerServiceAccount, "worker-service-account", "", "ServiceAccount of sync workers whose Dataset names none; with it, workers publish live progress (see config/rbac/worker_progress.yaml).")
	f.Float32Var(&opts.kubeAPIQPS, "kube-api-qps", 50, "Requests per second the manager sends the API server at most (client-side rate limit).")
	f.IntVar(&opts.kubeAPIBurst, "kube-api-burst", 100, "Requests the manager may send in a burst above --kube-api-qps.")
	f.IntVar(&opts.localityWebhookPort, "locality-webhook-port", 0, "Port of the admission webhook that gives pods reading a Dataset through the CSI driver a node affinity for its copies (TLS, certificate from --webhook-cert-dir); 0 disables it.")
	f.StringVar(&opts.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook's tls.crt and tls.key (cert-manager's, say), read again when they change; unused with --webhook-cert-secret.")
	f.StringVar(&opts.webhookCertSecret, "webhook-cert-secret", "", "NAMESPACE/NAME of the Secret the manager keeps its own webhook CA and serving certificate in: made on first start, renewed at two thirds of their life, the CA written into --webhook-configuration's caBundle. Needs --webhook-service and --webhook-configuration.")
	f.StringVar(&opts.webhookService, "webhook-service", "", "Service of the webhook, in --webhook-cert-secret's namespace: the names its serving certificate holds.")
	f.StringVar(&opts.webhookConfiguration, "webhook-configuration", "", "MutatingWebhookConfiguration whose webhooks' caBundle the manager keeps.")
	f.StringVar(&opts.agentNamespace, "agent-namespace", "", "Namespace of the node agents' pods; with --agent-selector, a copy whose node runs no Ready agent is reported not ready (NoAgent) and counted in pqcache_dataset_copies_without_agent.")
	f.StringVar(&opts.agentSelector, "agent-selector", "", "Label selector of the node agents' pods in --agent-namespace (e.g. app.kubernetes.io/component=agent).")
	f.StringVar(&opts.peerCA, "peer-ca", "", "NAMESPACE/NAME of the Secret the manager keeps the node agents' peer CA in (made on first start) and of the ConfigMap it publishes the CA certificate in; with --peer-agent-service-account, the manager approves and signs the agents' "+peertls.SignerName+" certificate requests.")
	f.StringVar(&opts.readersService, "readers-service", "", "NAMESPACE/NAME of the Service through which pods reach their node agent's S3 endpoint for readers; with --peer-ca, the agents' certificates may also name it, and the manager issues each namespace with per-node copies its readers' key (Secret "+s3creds.SecretName+") and the endpoint (ConfigMap "+s3creds.ConfigMapName+").")
	f.StringVar(&opts.readersMasterKey, "readers-master-key", "", "NAMESPACE/NAME of the Secret the readers' keys derive from (made on first start); required with --readers-service.")
	f.StringVar(&opts.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain, in the readers' Service's full name.")
	f.DurationVar(&opts.readersKeyEpoch, "readers-key-epoch", s3creds.DefaultEpochs.Length, "How often the readers' keys turn; a key is accepted for one to two of these.")
	f.StringVar(&opts.peerAgentSA, "peer-agent-service-account", "", "NAMESPACE/NAME of the node agents' ServiceAccount: the only requester whose "+peertls.SignerName+" certificate requests are approved.")
	f.StringVar(&opts.agentServiceAccount, "agent-service-account", "", "ServiceAccount of the node agents in --agent-namespace: granted, by name and in its namespace only, the credentials Secret that each Dataset with spec.replicas names (docs/security.md). Empty: no grants.")
	opts.access.bind(f)
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.zap.BindFlags(zapFlags)
	f.AddGoFlagSet(zapFlags)
	return cmd
}

func runManager(opts managerOptions) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	cfg, err := managerConfig(opts)
	if err != nil {
		return err
	}
	return manager.Run(ctrl.SetupSignalHandler(), cfg)
}

// managerConfig is the operator's configuration the flags give.
func managerConfig(opts managerOptions) (manager.Config, error) {
	worker, err := managerWorkerOptions(opts)
	if err != nil {
		return manager.Config{}, err
	}
	agents, err := agentPods(opts)
	if err != nil {
		return manager.Config{}, err
	}
	agentAccount, err := agentAccount(opts)
	if err != nil {
		return manager.Config{}, err
	}
	guard, err := opts.access.guard()
	if err != nil {
		return manager.Config{}, err
	}
	cfg := manager.Config{Version: version.Version, MetricsAddr: opts.metricsAddr, ProbeAddr: opts.probeAddr,
		LeaderElect: opts.leaderElect, LeaderElectionID: opts.leaderElectionID, LeaderElectionNamespace: opts.leaderElectionNS,
		KubeAPIQPS: opts.kubeAPIQPS, KubeAPIBurst: opts.kubeAPIBurst, EventsAddr: opts.eventsAddr, EventsQueryToken: opts.eventsQueryToken,
		LocalityWebhookPort: opts.localityWebhookPort, WebhookCertDir: opts.webhookCertDir, Guard: guard,
		Reconcilers: manager.Options{Worker: worker, MaxConcurrentSyncs: opts.maxConcurrentSyncs,
			MaxConcurrentBenchJobs: opts.maxConcurrentBenchJobs, MaxBenchJobsPerNode: opts.maxBenchJobsPerNode,
			Namespaces: opts.watchNamespaces, AgentPods: agents, AgentAccount: agentAccount, PricesFile: opts.pricesFile}}
	if cfg.WebhookCert, err = webhookCert(opts); err != nil {
		return manager.Config{}, err
	}
	if opts.peerCA != "" || opts.peerAgentSA != "" {
		if cfg.PeerCA, err = namespacedName("--peer-ca", opts.peerCA); err != nil {
			return manager.Config{}, err
		}
		if cfg.PeerAgentAccount, err = namespacedName("--peer-agent-service-account", opts.peerAgentSA); err != nil {
			return manager.Config{}, err
		}
	}
	if cfg.Readers, err = readersConfig(opts); err != nil {
		return manager.Config{}, err
	}
	return cfg, nil
}

// readersConfig is the readers' endpoint's configuration that the manager's flags give.
func readersConfig(opts managerOptions) (manager.Readers, error) {
	if opts.readersService == "" {
		return manager.Readers{}, nil
	}
	if opts.peerCA == "" {
		return manager.Readers{}, errors.New("--readers-service needs --peer-ca: the readers' endpoint serves with the agents' peer certificates")
	}
	if opts.readersKeyEpoch < 10*time.Minute {
		return manager.Readers{}, fmt.Errorf("--readers-key-epoch %s: at least 10m, or keys turn faster than pods start", opts.readersKeyEpoch)
	}
	r := manager.Readers{ClusterDomain: opts.clusterDomain, Epochs: s3creds.Epochs{Length: opts.readersKeyEpoch, Skew: s3creds.DefaultEpochs.Skew}}
	var err error
	if r.Service, err = namespacedName("--readers-service", opts.readersService); err != nil {
		return r, err
	}
	if r.MasterKey, err = namespacedName("--readers-master-key", opts.readersMasterKey); err != nil {
		return r, err
	}
	return r, nil
}

// managerWorkerOptions are the worker Jobs' options that the manager's flags give.
func managerWorkerOptions(opts managerOptions) (jobs.WorkerOptions, error) {
	worker := jobs.DefaultWorkerOptions()
	if opts.syncJobTTL < time.Minute {
		return worker, fmt.Errorf("--sync-job-ttl %s: must be at least 1m, or finished Jobs go before the operator reads their reports", opts.syncJobTTL)
	}
	worker.Image, worker.PolarsImage, worker.TTLAfterFinished = opts.workerImage, opts.polarsImage, opts.syncJobTTL
	worker.SparkImage = opts.sparkImage
	worker.ServiceAccount = opts.workerServiceAccount
	if opts.workerCABundle != "" {
		name, key, ok := strings.Cut(opts.workerCABundle, "/")
		if !ok || name == "" || key == "" {
			return worker, fmt.Errorf("--worker-ca-bundle %q: want CONFIGMAP/KEY", opts.workerCABundle)
		}
		worker.CABundle = &jobs.ConfigMapKey{Name: name, Key: key}
	}
	if opts.workerResources != "" {
		var res corev1.ResourceRequirements
		if err := json.Unmarshal([]byte(opts.workerResources), &res); err != nil {
			return worker, fmt.Errorf("--worker-resources: %w", err)
		}
		worker.Resources = res
	}
	worker.Access = jobs.AccessPolicy{AmbientNamespaces: opts.access.ambientNamespaces,
		DeniedCIDRs: opts.access.deniedCIDRs, AllowedCIDRs: opts.access.allowedCIDRs}
	return worker, nil
}

// agentPods is where the node agents run, from --agent-namespace and --agent-selector: both or
// neither.
func agentPods(opts managerOptions) (*dataset.AgentPods, error) {
	if opts.agentNamespace == "" && opts.agentSelector == "" {
		return nil, nil
	}
	if opts.agentNamespace == "" || opts.agentSelector == "" {
		return nil, fmt.Errorf("--agent-namespace and --agent-selector go together (got %q and %q)", opts.agentNamespace, opts.agentSelector)
	}
	sel, err := labels.Parse(opts.agentSelector)
	if err != nil {
		return nil, fmt.Errorf("--agent-selector %q: %w", opts.agentSelector, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("--agent-selector %q selects every pod of %s", opts.agentSelector, opts.agentNamespace)
	}
	return &dataset.AgentPods{Namespace: opts.agentNamespace, Selector: sel}, nil
}

// agentAccount is the node agents' ServiceAccount, from --agent-service-account in --agent-namespace,
// or nothing when the flag is empty.
func agentAccount(opts managerOptions) (types.NamespacedName, error) {
	if opts.agentServiceAccount == "" {
		return types.NamespacedName{}, nil
	}
	if opts.agentNamespace == "" {
		return types.NamespacedName{}, fmt.Errorf("--agent-service-account %q needs --agent-namespace", opts.agentServiceAccount)
	}
	return types.NamespacedName{Namespace: opts.agentNamespace, Name: opts.agentServiceAccount}, nil
}

// webhookCert is where the manager keeps its own webhook certificate: all three flags, or none.
func webhookCert(opts managerOptions) (manager.WebhookCert, error) {
	if opts.webhookCertSecret == "" && opts.webhookService == "" && opts.webhookConfiguration == "" {
		return manager.WebhookCert{}, nil
	}
	if opts.webhookService == "" || opts.webhookConfiguration == "" {
		return manager.WebhookCert{}, errors.New("--webhook-cert-secret, --webhook-service and --webhook-configuration go together")
	}
	secret, err := namespacedName("--webhook-cert-secret", opts.webhookCertSecret)
	if err != nil {
		return manager.WebhookCert{}, err
	}
	return manager.WebhookCert{Secret: secret, Service: opts.webhookService, Configuration: opts.webhookConfiguration}, nil
}
