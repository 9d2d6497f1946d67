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

package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pqcache/pqcache/agent/peer/peertls"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/controllers/eventhub"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/locality"
	"github.com/pqcache/pqcache/controllers/readeraccess"
	"github.com/pqcache/pqcache/controllers/webhookcert"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// Config is the operator's configuration, as the manager command's flags give it.
type Config struct {
	// Version is logged at start.
	Version string
	// MetricsAddr and ProbeAddr are the addresses of the metrics endpoint ("0": none) and the probes.
	MetricsAddr, ProbeAddr string
	// LeaderElect elects a leader among replicas, with a Lease of LeaderElectionID in
	// LeaderElectionNamespace (empty: the pod's).
	LeaderElect                               bool
	LeaderElectionID, LeaderElectionNamespace string
	// KubeAPIQPS and KubeAPIBurst bound the requests sent to the API server.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Reconcilers configure the Dataset and BenchRun reconcilers (Events is filled by Run).
	Reconcilers Options
	// EventsAddr is where stores post S3 event notifications ("" or "0": no webhook; SQS sources run
	// either way), and EventsQueryToken takes a Dataset's token from the query string too.
	EventsAddr       string
	EventsQueryToken bool
	// LocalityWebhookPort serves the locality webhook (0: not served), with its certificate from
	// WebhookCertDir (cert-manager's, or anyone's), or, when WebhookCert names a Secret, one the
	// manager makes and renews itself.
	LocalityWebhookPort int
	WebhookCertDir      string
	WebhookCert         WebhookCert
	// PeerCA and PeerAgentAccount, both set, run the signer of the node agents' peer certificates: the
	// CA's Secret and ConfigMap, and the only ServiceAccount whose requests are approved.
	PeerCA, PeerAgentAccount types.NamespacedName
	// Guard refuses the denied endpoint addresses to the event hub's SQS clients (nil: none).
	Guard *s3store.DialGuard
	// Readers, with a Service, issues each namespace its keys to the agents' S3 endpoint for readers.
	Readers Readers
}

// Readers configures the node agents' S3 endpoint for readers, on the manager's side: the Service
// pods reach it through (whose names the agents' certificates may carry), the Secret of the master
// key, the cluster's DNS domain, and how long each key lives. A zero Service: no readers' endpoint.
type Readers struct {
	Service, MasterKey types.NamespacedName
	ClusterDomain      string
	Epochs             s3creds.Epochs
}

// endpoint is the URL pods reach the readers' Service at.
func (r Readers) endpoint() string {
	return "https://" + r.Service.Name + "." + r.Service.Namespace + ".svc"
}

// WebhookCert is where the manager keeps the webhook's own certificate (webhookcert.Rotator): the
// Secret, the webhook's Service (in the Secret's namespace) and the MutatingWebhookConfiguration
// whose caBundle it writes. A zero Secret: the certificate comes from WebhookCertDir.
type WebhookCert struct {
	Secret                 types.NamespacedName
	Service, Configuration string
}

// NewScheme knows Kubernetes' built-in kinds and pqcache's: what the manager and the node agent read
// and write.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	return scheme
}

// Run runs the operator until ctx ends: the reconcilers, the event hub, the locality webhook and the
// peer signer, in one manager with its metrics and probes.
func Run(ctx context.Context, cfg Config) error {
	rotator := newRotator(cfg)
	mgr, err := newManager(cfg, rotator)
	if err != nil {
		return err
	}
	if err := addLocalityWebhook(mgr, cfg.LocalityWebhookPort, rotator); err != nil {
		return err
	}
	hub := newEventHub(mgr, cfg)
	if err := mgr.Add(hub); err != nil {
		return fmt.Errorf("adding the event hub: %w", err)
	}
	opts := cfg.Reconcilers
	opts.Events = hub
	if cfg.Readers.Service.Name != "" {
		opts.Worker.ReadersEndpoint = cfg.Readers.endpoint()
	}
	if err := SetupAll(mgr, opts); err != nil {
		return err
	}
	if err := addPeerSigner(mgr, cfg.PeerCA, cfg.PeerAgentAccount, cfg.Readers); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	ctrl.Log.WithName("manager").Info("Starting manager", "version", cfg.Version, "leaderElection", cfg.LeaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// newRotator is the keeper of the webhook's own certificate, or nil when it comes from files. Its
// clients are set once the manager exists; the webhook server asks it for the certificate.
func newRotator(cfg Config) *webhookcert.Rotator {
	if cfg.LocalityWebhookPort == 0 || cfg.WebhookCert.Secret.Name == "" {
		return nil
	}
	return &webhookcert.Rotator{Secret: cfg.WebhookCert.Secret, Service: cfg.WebhookCert.Service,
		WebhookConfig: cfg.WebhookCert.Configuration, Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("webhook-cert")))}
}

// newManager is the controller-runtime manager of cfg, its cache limited to pqcache's own objects,
// its webhook server's certificate from the rotator when there is one.
func newManager(cfg Config, rotator *webhookcert.Rotator) (ctrl.Manager, error) {
	rest, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	// controller-runtime's default (20/s, bursts of 30) queues requests for seconds once many
	// Datasets poll their Jobs' pods; and a webhook token read that waits loses the store's post.
	rest.QPS, rest.Burst = cfg.KubeAPIQPS, cfg.KubeAPIBurst
	mgr, err := ctrl.NewManager(rest, ctrl.Options{
		Scheme:                  NewScheme(),
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.ProbeAddr,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        cfg.LeaderElectionID,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// The manager exits as soon as it loses the lease, so that a new leader never overlaps with a
		// stale one that still creates Jobs.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         jobs.CacheOptions(cfg.Reconcilers.Namespaces),
		WebhookServer:                 webhook.NewServer(webhookOptions(cfg, rotator)),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// webhookOptions serve TLS 1.2 and up, with the rotator's certificate or the files in the directory.
func webhookOptions(cfg Config, rotator *webhookcert.Rotator) webhook.Options {
	o := webhook.Options{Port: cfg.LocalityWebhookPort, CertDir: cfg.WebhookCertDir}
	if rotator != nil {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.GetCertificate = rotator.GetCertificate })
	}
	return o
}

// newEventHub is the manager's hub of S3 event notifications: SQS sources and, unless the address is
// "" or "0", the webhook endpoint. It reads Secrets uncached. Its SQS clients connect through the
// guard (nil: anywhere), and poll with the manager's identity only for the namespaces allowed.
func newEventHub(mgr ctrl.Manager, cfg Config) *eventhub.Hub {
	addr := cfg.EventsAddr
	if addr == "0" {
		addr = ""
	}
	var sqsOpts []func(*sqs.Options)
	if cfg.Guard != nil {
		hc := cfg.Guard.Guard(s3store.NewHTTPClient(s3store.DefaultClientTimeouts))
		sqsOpts = append(sqsOpts, func(o *sqs.Options) { o.HTTPClient = hc })
	}
	return eventhub.New(eventhub.Options{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), BindAddress: addr,
		QueryToken: cfg.EventsQueryToken, SQSClientOptions: sqsOpts, AmbientNamespaces: cfg.Reconcilers.Worker.Access.AmbientNamespaces,
		Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("events")))})
}

// addLocalityWebhook serves the locality webhook when its port is set, and runs the rotator of its
// certificate when there is one; the manager is ready only once it serves with a certificate, so that
// its Service never sends the API server to a pod that cannot answer.
func addLocalityWebhook(mgr ctrl.Manager, port int, rotator *webhookcert.Rotator) error {
	if port == 0 {
		return nil
	}
	if rotator != nil {
		rotator.Client, rotator.Reader = mgr.GetClient(), mgr.GetAPIReader()
		if err := mgr.Add(rotator); err != nil {
			return fmt.Errorf("adding the webhook certificate's rotator: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook-certificate", rotator.Ready); err != nil {
			return fmt.Errorf("adding the webhook certificate's readiness check: %w", err)
		}
	}
	locality.Register(mgr.GetWebhookServer(), mgr.GetClient(), admission.NewDecoder(mgr.GetScheme()))
	if err := mgr.AddReadyzCheck("locality-webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("adding the webhook's readiness check: %w", err)
	}
	return nil
}

// addPeerSigner runs the approver and signer of the agents' peer certificates when both names are
// set (the chart sets them when the agent is enabled), and, with a readers' Service, the issuer of
// the readers' keys: their endpoint's certificates are the peer ones, also naming the Service.
func addPeerSigner(mgr ctrl.Manager, ca, agents types.NamespacedName, readers Readers) error {
	if ca.Name == "" && agents.Name == "" {
		return nil
	}
	s := &peertls.Signer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CA: ca, Agent: agents,
		Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("peer-signer")))}
	if readers.Service.Name != "" {
		s.ServiceNames = peertls.ServiceDNSNames(readers.Service.Namespace, readers.Service.Name, readers.ClusterDomain)
		issuer := &readeraccess.Issuer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Master: readers.MasterKey, CA: ca,
			Endpoint: readers.endpoint(), Epochs: readers.Epochs,
			Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("readers-access")))}
		if err := issuer.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return s.SetupWithManager(mgr)
}
