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

package webhookcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const testNS, testConfig = "pqcache-system", "pq-locality"

// startAPIServer is a real API server (envtest) with the manager's namespace and a webhook
// configuration as the chart renders it: no caBundle.
func startAPIServer(t *testing.T) client.Client {
	t.Helper()
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
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}); err != nil {
		t.Fatal(err)
	}
	hook := func(name string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{Name: name, AdmissionReviewVersions: []string{"v1"},
			SideEffects:   ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: testNS, Name: "pq-webhook", Path: ptr.To("/place-pods")}},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}}}
	}
	if err := c.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{hook("a.test.pqcache.dev"), hook("b.test.pqcache.dev")}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// clock is a settable clock shared by the replicas of a test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newRotator(c client.Client, clk *clock) *Rotator {
	return &Rotator{Client: c, Reader: c, Secret: types.NamespacedName{Namespace: testNS, Name: "pq-webhook-cert"},
		Service: "pq-webhook", WebhookConfig: testConfig, Now: clk.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestReplicasAgreeAndTheAPIServersCAFollows runs two replicas' rotators against a real API server:
// they agree on one certificate, a TLS client that trusts the configuration's caBundle reaches a
// server using it, and the caBundle follows a renewal, a deleted Secret and a caBundle put back.
func TestReplicasAgreeAndTheAPIServersCAFollows(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	one, two := newRotator(c, clk), newRotator(c, clk)
	if one.Ready(nil) == nil {
		t.Fatal("ready before it has a certificate")
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*Rotator{one, two} {
		wg.Go(func() { errs[i] = r.Step(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a replica's first step: %v", err)
		}
	}
	first := sameServing(t, one, two)
	handshake(t, c, one, clk)

	// A renewal at two thirds: one replica renews, the other serves it at its next step.
	clk.Add(servingLifetime * 2 / 3)
	step(t, one)
	step(t, two)
	if renewed := sameServing(t, one, two); renewed.Equal(first) {
		t.Fatal("the serving certificate was not renewed at two thirds of its life")
	}
	handshake(t, c, two, clk)

	// A sync that puts the rendered configuration back (no caBundle): the next step writes it again.
	cfg := webhookConfig(t, c)
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.CABundle = nil
	}
	if err := c.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	step(t, one)
	handshake(t, c, one, clk)

	// A deleted Secret: a new CA and certificate, and the configuration trusts the new CA.
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "pq-webhook-cert"}}); err != nil {
		t.Fatal(err)
	}
	step(t, two)
	step(t, one)
	sameServing(t, one, two)
	handshake(t, c, one, clk)
}

func step(t *testing.T, r *Rotator) {
	t.Helper()
	if err := r.Step(context.Background()); err != nil {
		t.Fatalf("step: %v", err)
	}
}

// sameServing checks that both replicas serve the one certificate, and returns it.
func sameServing(t *testing.T, a, b *Rotator) *x509.Certificate {
	t.Helper()
	ca, err := a.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Leaf.Equal(cb.Leaf) {
		t.Fatal("the replicas serve different certificates")
	}
	if a.Ready(nil) != nil {
		t.Fatal("not ready with a certificate")
	}
	return ca.Leaf
}

func webhookConfig(t *testing.T, c client.Client) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(context.Background(), types.NamespacedName{Name: testConfig}, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// handshake serves TLS on 127.0.0.1 with r's certificate and connects as the API server would: the
// Service's DNS name, trusting each webhook's caBundle as the configuration now holds it, at the
// test's clock.
func handshake(t *testing.T, c client.Client, r *Rotator, clk *clock) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	for _, h := range webhookConfig(t, c).Webhooks {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(h.ClientConfig.CABundle) {
			t.Fatalf("%s: caBundle holds no certificate", h.Name)
		}
		addr := ln.Addr().String()
		tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Time: clk.Now, ServerName: "pq-webhook.pqcache-system.svc"},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
		hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://pq-webhook.pqcache-system.svc/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: the API server's call would fail: %v", h.Name, err)
		}
		_ = resp.Body.Close()
		tr.CloseIdleConnections()
	}
}
