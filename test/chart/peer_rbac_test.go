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

package chart

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
)

// TestPeersRunWithTheChartsRBAC installs the rendered chart's ServiceAccounts and RBAC into a real
// API server, runs the manager's peer signer as the chart's manager ServiceAccount and an agent's
// certificate requester and token verifier with a token of an agent pod, and checks that the agent
// gets its certificate and verifies a peer's token with no forbidden error: the chart grants what
// peers need, and the CA is made at run time, not rendered.
func TestPeersRunWithTheChartsRBAC(t *testing.T) {
	const ns, agentSA, caName, node = "pqcache-system", "pq-pqcache-agent", "pq-pqcache-peer-ca", "node-a"
	objs := render(t, "agent.enabled=true")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin", "k8s", "1.37.2-linux-amd64")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (run `make envtest`): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-a"}, Spec: corev1.PodSpec{NodeName: node,
		ServiceAccountName: agentSA, Containers: []corev1.Container{{Name: "agent", Image: "pqcache"}}}}
	install(ctx, t, admin, objs, []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}}, pod)
	pod.Status.PodIP, pod.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	if err := admin.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	logs := &syncWriter{b: &bytes.Buffer{}}
	log := slog.New(slog.NewTextHandler(logs, nil))
	startChartSigner(ctx, t, cfg, scheme, log)

	// The agent, with its pod's own API token.
	token := func(audiences ...string) string {
		tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentSA}}
		if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	acfg := rest.AnonymousClientConfig(cfg)
	acfg.BearerToken = token()
	ac, err := client.New(acfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cert := &peertls.Certificate{}
	req := &peertls.Requester{Client: ac, Reader: ac, Node: node, IPs: []net.IP{net.ParseIP("127.0.0.1")},
		CA: types.NamespacedName{Namespace: ns, Name: caName}, Cert: cert, Trust: &peertls.Trust{}, Log: log, Poll: 100 * time.Millisecond}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err = req.Step(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent got no certificate with the chart's RBAC: %v\nlog:\n%s", err, logs.String())
		}
	}
	v := identity.NewVerifier(ac, ns, agentSA)
	r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://peer/", nil)
	r.Header.Set("Authorization", "Bearer "+token(identity.Audience))
	r.Header.Set(identity.HeaderNonce, strings.Repeat("ab", 16))
	r.Header.Set(identity.HeaderTimestamp, strconv.FormatInt(time.Now().UnixMilli(), 10))
	if c, err := v.Authenticate(r); err != nil || c.Node != node {
		t.Fatalf("the agent verifying a peer's token with the chart's RBAC: %v %v", c, err)
	}
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Fatalf("a forbidden error with the chart's RBAC:\n%s", logs.String())
	}
}

// startChartSigner runs the manager's peer signer as the chart's manager ServiceAccount and nothing
// more.
func startChartSigner(ctx context.Context, t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, log *slog.Logger) {
	t.Helper()
	const ns = "pqcache-system"
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":pq-pqcache",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	mgr, err := ctrl.NewManager(as, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	signer := &peertls.Signer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CA: types.NamespacedName{Namespace: ns, Name: "pq-pqcache-peer-ca"},
		Agent: types.NamespacedName{Namespace: ns, Name: "pq-pqcache-agent"}, Log: log}
	if err := signer.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
}

// install creates before, the rendered chart's ServiceAccounts and RBAC, and then after.
func install(ctx context.Context, t *testing.T, admin client.Client, objs rendered, before []client.Object, after ...client.Object) {
	t.Helper()
	setup := before
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			setup = append(setup, u)
		}
	}
	for _, o := range append(setup, after...) {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}
