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

package peertls_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
)

const ns, agentSA, node = "pqcache", "pqcache-agent", "node-a"

// world is a real API server (envtest) with the agents' ServiceAccount, a node, and an agent pod on
// it, and the manager's signer running; the agent's clients use tokens of that pod.
type world struct {
	ctx    context.Context
	cfg    *rest.Config
	admin  client.Client
	scheme *runtime.Scheme
	pod    *corev1.Pod
	log    *slog.Logger
}

func startWorld(t *testing.T) *world {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	if _, err := os.Stat(assets); err != nil {
		t.Skipf("no envtest binaries at %s (make envtest builds them)", assets)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{ctx: t.Context(), cfg: cfg, admin: admin, scheme: scheme, log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	w.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	w.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentSA}})
	w.create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	// The agent's grants for this, as the chart gives them (charts/pqcache/templates/peer-tls.yaml).
	w.create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-peer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"pqcache-peer-ca"}},
	}})
	w.create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-peer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "agent-peer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: agentSA}}})
	w.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-a"}, Spec: corev1.PodSpec{NodeName: node,
		ServiceAccountName: agentSA, Containers: []corev1.Container{{Name: "agent", Image: "pqcache"}}}}
	w.create(t, w.pod)
	w.pod.Status.PodIP, w.pod.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	if err := admin.Status().Update(w.ctx, w.pod); err != nil {
		t.Fatal(err)
	}
	w.startSigner(t)
	return w
}

func (w *world) create(t *testing.T, o client.Object) {
	t.Helper()
	if err := w.admin.Create(w.ctx, o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// readerNames are the readers' Service's names the signer admits.
var readerNames = peertls.ServiceDNSNames(ns, "pqcache-s3", "cluster.local")

// startSigner runs the manager's approver and signer, as `pqcache manager --peer-ca` does.
func (w *world) startSigner(t *testing.T) {
	mgr, err := ctrl.NewManager(w.cfg, ctrl.Options{Scheme: w.scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	s := &peertls.Signer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CA: types.NamespacedName{Namespace: ns, Name: "pqcache-peer-ca"},
		Agent: types.NamespacedName{Namespace: ns, Name: agentSA}, ServiceNames: readerNames, Log: w.log.With("component", "signer")}
	if err := s.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(w.ctx) }()
}

// token is a token of the agent pod's ServiceAccount, bound to the pod, for audiences (none: the
// API server's own).
func (w *world) token(t *testing.T, audiences ...string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentSA}}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(int64(600)),
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: w.pod.Name, UID: w.pod.UID}}}
	if err := w.admin.SubResource("token").Create(w.ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	return tr.Status.Token
}

// agentClient is a client with the agent pod's API token: what the agent may do, and no more.
func (w *world) agentClient(t *testing.T) client.Client {
	cfg := rest.AnonymousClientConfig(w.cfg)
	cfg.BearerToken = w.token(t)
	c, err := client.New(cfg, client.Options{Scheme: w.scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPeerIdentityAndTLS: an agent gets its certificate through a CSR that the manager approves and
// signs; a peer server with that certificate and the token verifier accepts the agent's own token,
// refuses a token of another audience, a replayed request and plain HTTP.
func TestPeerIdentityAndTLS(t *testing.T) {
	w := startWorld(t)
	ac := w.agentClient(t)
	cert, trust := &peertls.Certificate{}, &peertls.Trust{}
	req := &peertls.Requester{Client: ac, Reader: ac, Node: node, IPs: []net.IP{net.ParseIP("127.0.0.1")}, ServiceNames: readerNames,
		CA: types.NamespacedName{Namespace: ns, Name: "pqcache-peer-ca"}, Cert: cert, Trust: trust, Log: w.log, Poll: 100 * time.Millisecond, Timeout: 30 * time.Second}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = req.Step(w.ctx); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("the agent got no certificate: %v", err)
	}
	leaf, _ := cert.GetCertificate(nil)
	if got := leaf.Leaf.DNSNames; !slices.Equal(got, append([]string{node}, readerNames...)) || !leaf.Leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("the certificate names %v %v", got, leaf.Leaf.IPAddresses)
	}

	verifier := identity.NewVerifier(ac, ns, agentSA)
	var callers []string
	srv := &peer.Server{Auth: verifier, Log: w.log, Roots: func(string) (string, bool) { return "", false },
		Authorize: func(_ context.Context, c peer.Caller, _ string) error { callers = append(callers, c.Node); return nil }}
	l, err := (&net.ListenConfig{}).Listen(w.ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = agent.PeerServer{Listener: l, Server: srv, TLS: peertls.ServerConfig(cert)}.Start(w.ctx) }()
	url := "https://" + l.Addr().String() + "/ns.dataset?list-type=2"

	peerToken := w.token(t, identity.Audience)
	// An unknown bucket answers 404 only after the caller is verified; a refused caller gets 403.
	var captured http.Header
	send := func(token string) int {
		s := identity.Signing{Token: func() (string, error) { return token, nil }, Next: capture{trust.HTTPClient(), &captured}}
		return status(t, s, url, nil)
	}
	if got := send(peerToken); got != http.StatusNotFound || len(callers) != 0 {
		t.Fatalf("the agent's own token: %d, want 404 (verified, no such bucket)", got)
	}
	if got := status(t, trust.HTTPClient(), url, captured); got != http.StatusForbidden {
		t.Errorf("a replayed request: %d, want 403", got)
	}
	if got := send(w.token(t)); got != http.StatusForbidden {
		t.Errorf("the agent's API token (another audience): %d, want 403", got)
	}
	if got := send(w.token(t, "another-audience")); got != http.StatusForbidden {
		t.Errorf("a token for another audience: %d, want 403", got)
	}
	plain := strings.Replace(url, "https://", "http://", 1)
	if got := status(t, http.DefaultClient, plain, captured); got == http.StatusNotFound || got == http.StatusOK {
		t.Errorf("plain HTTP to the TLS peer: %d, want it refused", got)
	}
}

// capture records the headers of the request it sends.
type capture struct {
	next identity.HTTPDoer
	h    *http.Header
}

func (c capture) Do(r *http.Request) (*http.Response, error) {
	*c.h = r.Header.Clone()
	return c.next.Do(r)
}

// status sends a GET with header through d and returns its status (0 when it was not answered).
func status(t *testing.T, d identity.HTTPDoer, url string, header http.Header) int {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != nil {
		r.Header = header.Clone()
	}
	resp, err := d.Do(r)
	if err != nil {
		t.Logf("%s: %v", url, err)
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	t.Logf("%s: %d %s", url, resp.StatusCode, b)
	return resp.StatusCode
}

// TestSignerDeniesOthers: a request from a user that is not the agents' ServiceAccount, and one from
// the agent for another node, are denied, and no certificate is issued for them.
func TestSignerDeniesOthers(t *testing.T) {
	w := startWorld(t)
	_, foreign, err := peertls.NewRequest("node-b", []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	_, own, err := peertls.NewRequest(node, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	_, otherName, err := peertls.NewRequest(node, []net.IP{net.ParseIP("127.0.0.1")}, readerNames[0], "kubernetes.default.svc")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		c    client.Client
		pem  []byte
		want string
	}{
		{"the agent, for another node", w.agentClient(t), foreign, "subject"},
		{"the agent, for a name that is not the readers' Service", w.agentClient(t), otherName, "kubernetes.default.svc"},
		{"an administrator, for the agent's node", w.admin, own, "not by the node agents' ServiceAccount"},
	}
	for _, c := range cases {
		csr := &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
			Spec: certv1.CertificateSigningRequestSpec{Request: c.pem, SignerName: peertls.SignerName,
				Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}}}
		if err := c.c.Create(w.ctx, csr); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var msg string
		for deadline := time.Now().Add(20 * time.Second); msg == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err := w.admin.Get(w.ctx, client.ObjectKeyFromObject(csr), csr); err != nil {
				t.Fatal(err)
			}
			for _, cond := range csr.Status.Conditions {
				if cond.Type == certv1.CertificateDenied {
					msg = cond.Message
				}
				if cond.Type == certv1.CertificateApproved {
					t.Fatalf("%s: approved", c.name)
				}
			}
		}
		if !strings.Contains(msg, c.want) || len(csr.Status.Certificate) > 0 {
			t.Errorf("%s: denied with %q (certificate %d bytes), want a denial saying %q", c.name, msg, len(csr.Status.Certificate), c.want)
		}
	}
	// The CA is the manager's, in a Secret of its namespace; agents see only its certificate.
	var cm corev1.ConfigMap
	if err := w.admin.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: "pqcache-peer-ca"}, &cm); err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode([]byte(cm.Data[peertls.CAKey]))
	if blk == nil {
		t.Fatal("the CA ConfigMap holds no certificate")
	}
	if ca, err := x509.ParseCertificate(blk.Bytes); err != nil || !ca.IsCA {
		t.Fatalf("the published CA: %v", err)
	}
	if strings.Contains(cm.Data[peertls.CAKey], "PRIVATE KEY") {
		t.Fatal("the CA ConfigMap holds a private key")
	}
}
