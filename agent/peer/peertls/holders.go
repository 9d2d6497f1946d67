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
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Certificate is the agent's serving certificate, replaced as it is renewed.
type Certificate struct {
	mu      sync.Mutex
	cert    *tls.Certificate
	renewAt time.Time
}

// Set takes a signed certificate (PEM, as the CSR's status gives it) for key.
func (c *Certificate) Set(certPEM []byte, key *ecdsa.PrivateKey) error {
	tc := tls.Certificate{PrivateKey: key}
	for rest := certPEM; ; {
		var der []byte
		der, rest = nextCert(rest)
		if der == nil {
			break
		}
		tc.Certificate = append(tc.Certificate, der)
	}
	if len(tc.Certificate) == 0 {
		return errors.New("the issued certificate holds no PEM CERTIFICATE")
	}
	leaf, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		return fmt.Errorf("parsing the issued certificate: %w", err)
	}
	if !key.PublicKey.Equal(leaf.PublicKey) {
		return errors.New("the issued certificate is not for this agent's key")
	}
	tc.Leaf = leaf
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cert = &tc
	c.renewAt = RenewAt(leaf.NotBefore, leaf.NotAfter)
	return nil
}

// RenewAt is when a certificate valid from notBefore to notAfter is asked for again: at two thirds
// of its life, as kubelet renews its own.
func RenewAt(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(notAfter.Sub(notBefore) * 2 / 3)
}

// RenewAt is when the current certificate is due for renewal; zero when there is none.
func (c *Certificate) RenewAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renewAt
}

// GetCertificate is tls.Config's: the current certificate, or an error until there is one.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert == nil {
		return nil, errors.New("this agent has no peer certificate yet")
	}
	return c.cert, nil
}

// ServerConfig is the peer server's TLS: TLS 1.3, with the current certificate.
func ServerConfig(c *Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: c.GetCertificate}
}

// Trust is the peer CA the agent verifies other agents against, as the ConfigMap has it now.
type Trust struct {
	mu     sync.Mutex
	pem    []byte
	client identity.HTTPDoer
}

// Set takes the CA certificates (PEM); a CA that changed gets a new HTTP client, so that no
// connection made under the old one is used again.
func (t *Trust) Set(caPEM []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil && bytes.Equal(caPEM, t.pem) {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the peer CA holds no PEM certificate")
	}
	cfg := ClientConfig(pool)
	t.pem = caPEM
	t.client = s3store.NewHTTPClient(s3store.DefaultClientTimeouts).
		WithTransportOptions(func(tr *http.Transport) { tr.TLSClientConfig = cfg })
	return nil
}

// ClientConfig verifies peers against pool, over TLS 1.3.
func ClientConfig(pool *x509.CertPool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool}
}

// HTTPClient is the client to peers under the current CA; before the agent has read one, its
// requests fail (the follower then falls back to the bucket).
func (t *Trust) HTTPClient() identity.HTTPDoer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client == nil {
		return noTrust{}
	}
	return t.client
}

// Ready says whether the CA has been read.
func (t *Trust) Ready() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.client != nil
}

type noTrust struct{}

func (noTrust) Do(*http.Request) (*http.Response, error) {
	return nil, errors.New("this agent has not read the peer CA yet")
}
