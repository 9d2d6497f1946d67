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

package peertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func request(t *testing.T, tmpl *x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestCheckRequest(t *testing.T) {
	podIPs := []net.IP{net.ParseIP("10.0.1.5"), net.ParseIP("fd00::5")}
	readers := ServiceDNSNames("pqcache-system", "pqcache-s3", "cluster.local")
	good := func() *x509.CertificateRequest {
		return &x509.CertificateRequest{Subject: pkix.Name{CommonName: CommonName("node-a")}, DNSNames: []string{"node-a"},
			IPAddresses: []net.IP{net.ParseIP("10.0.1.5")}}
	}
	cases := []struct {
		name   string
		change func(*x509.CertificateRequest)
		node   string
		want   string
	}{
		{"its own node and pod IP", func(*x509.CertificateRequest) {}, "node-a", ""},
		{"both pod IPs", func(r *x509.CertificateRequest) { r.IPAddresses = podIPs }, "node-a", ""},
		{"another node's name", func(r *x509.CertificateRequest) { r.DNSNames = []string{"node-b"} }, "node-a", "node's name"},
		{"an extra DNS name", func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "kubernetes.default") }, "node-a", "readers' Service"},
		{"the readers' Service", func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, readers...) }, "node-a", ""},
		{"a Service name twice", func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, readers[0], readers[0]) }, "node-a", "named twice"},
		{"the Service's name first", func(r *x509.CertificateRequest) { r.DNSNames = []string{readers[0], "node-a"} }, "node-a", "node's name"},
		{"another subject", func(r *x509.CertificateRequest) { r.Subject.CommonName = "admin" }, "node-a", "subject"},
		{"an IP not its pod's", func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("10.0.2.9")} }, "node-a", "not an IP"},
		{"no IP", func(r *x509.CertificateRequest) { r.IPAddresses = nil }, "node-a", "no IP"},
		{"a URI", func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}} }, "node-a", "URIs"},
		{"a token without a node", func(*x509.CertificateRequest) {}, "", "names no node"},
		{"from another node's token", func(*x509.CertificateRequest) {}, "node-b", "subject"},
	}
	for _, c := range cases {
		tmpl := good()
		c.change(tmpl)
		err := CheckRequest(request(t, tmpl), c.node, podIPs, readers...)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// TestTLSBetweenPeers: a certificate signed for a request serves TLS that a client trusting the CA
// accepts, a client trusting another CA refuses, and a plain-HTTP request does not get through.
func TestTLSBetweenPeers(t *testing.T) {
	now := time.Now()
	caPEM, keyPEM, err := NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(caPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, csrPEM, err := NewRequest("node-a", []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.Sign(req, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := &Certificate{}
	if _, err := cert.GetCertificate(nil); err == nil {
		t.Fatal("an empty Certificate served")
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err := cert.Set(certPEM, other); err == nil {
		t.Fatal("a certificate was taken for another key")
	}
	if err := cert.Set(certPEM, key); err != nil {
		t.Fatal(err)
	}
	if got, want := cert.RenewAt(), now.Add(-5*time.Minute).Add(65*time.Minute*2/3); got.Sub(want).Abs() > 2*time.Second {
		t.Errorf("renew at %s, want %s", got, want)
	}
	// Served as the agent serves (agent.PeerServer): a TLS listener with ServerConfig, not httptest's
	// StartTLS, which puts a certificate of its own first.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Listener = tls.NewListener(srv.Listener, ServerConfig(cert))
	srv.Start()
	t.Cleanup(srv.Close)
	srv.URL = strings.Replace(srv.URL, "http://", "https://", 1)

	trust := &Trust{}
	if resp, err := trust.HTTPClient().Do(mustGet(t, srv.URL)); err == nil {
		_ = resp.Body.Close()
		t.Fatal("a request was sent before the CA was read")
	}
	if err := trust.Set(caPEM); err != nil {
		t.Fatal(err)
	}
	resp, err := trust.HTTPClient().Do(mustGet(t, srv.URL))
	if err != nil {
		t.Fatalf("a client trusting the CA: %v", err)
	}
	_ = resp.Body.Close()
	otherCA, _, _ := NewCA(now)
	if err := trust.Set(otherCA); err != nil {
		t.Fatal(err)
	}
	if resp, err := trust.HTTPClient().Do(mustGet(t, srv.URL)); err == nil {
		_ = resp.Body.Close()
		t.Fatal("a client trusting another CA accepted the peer")
	}
	plain := "http://" + strings.TrimPrefix(srv.URL, "https://")
	resp, err = http.DefaultClient.Do(mustGet(t, plain))
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS peer: %d, want 400 or an error", resp.StatusCode)
		}
	}
}

func mustGet(t *testing.T, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
