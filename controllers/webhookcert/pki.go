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
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Lifetimes: the CA's is long, since a new CA must reach the webhook configuration before the API
// server trusts what it signs; the serving certificate's is a year. Each is renewed at two thirds of
// its life, as kubelet renews its own.
const (
	caLifetime      = 10 * 365 * 24 * time.Hour
	servingLifetime = 365 * 24 * time.Hour
	backdate        = 5 * time.Minute // clocks of the API server and the manager differ a little
)

// Secret keys: the serving pair under the names of a kubernetes.io/tls Secret, and the CA beside it.
// ca.crt may hold two certificates while a CA is replaced: the new one first, then the old one until
// it expires, so that the API server trusts replicas still serving a certificate the old CA signed.
const (
	keyCert   = "tls.crt"
	keyKey    = "tls.key"
	keyCA     = "ca.crt"
	keyCAKey  = "ca.key"
	pemCert   = "CERTIFICATE"
	pemECKey  = "EC PRIVATE KEY"
	caSubject = "pqcache webhook CA"
)

// bundle is what the Secret holds, parsed.
type bundle struct {
	caCert   *x509.Certificate
	caKey    *ecdsa.PrivateKey
	caPEM    []byte // the CA certificates the webhook configuration trusts (current first)
	serving  tls.Certificate
	servPEM  []byte
	servKPEM []byte
}

// renewAt is when a certificate valid from notBefore to notAfter is replaced.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// parseBundle reads the Secret's data; an error says what is missing or broken (the Rotator then
// makes a new bundle).
func parseBundle(data map[string][]byte) (*bundle, error) {
	caCert, err := firstCert(data[keyCA])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyCA, err)
	}
	caKey, err := parseKey(data[keyCAKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyCAKey, err)
	}
	if !caKey.PublicKey.Equal(caCert.PublicKey) {
		return nil, errors.New("the CA key does not match the CA certificate")
	}
	serving, err := tls.X509KeyPair(data[keyCert], data[keyKey])
	if err != nil {
		return nil, fmt.Errorf("the serving pair: %w", err)
	}
	if err := serving.Leaf.CheckSignatureFrom(caCert); err != nil {
		return nil, fmt.Errorf("the serving certificate is not signed by the CA: %w", err)
	}
	return &bundle{caCert: caCert, caKey: caKey, caPEM: data[keyCA], serving: serving,
		servPEM: data[keyCert], servKPEM: data[keyKey]}, nil
}

// data is the Secret's data for b.
func (b *bundle) data() map[string][]byte {
	kder, _ := x509.MarshalECPrivateKey(b.caKey) // a key we made or parsed always marshals
	return map[string][]byte{keyCA: b.caPEM, keyCAKey: pem.EncodeToMemory(&pem.Block{Type: pemECKey, Bytes: kder}),
		keyCert: b.servPEM, keyKey: b.servKPEM}
}

// due says why b must be replaced at now, for the service's DNS names; "" when it serves on.
func (b *bundle) due(now time.Time, dnsNames []string) string {
	switch {
	case !now.Before(renewAt(b.caCert)):
		return "the CA is due for renewal"
	case !now.Before(renewAt(b.serving.Leaf)):
		return "the serving certificate is due for renewal"
	}
	for _, n := range dnsNames {
		if err := b.serving.Leaf.VerifyHostname(n); err != nil {
			return fmt.Sprintf("the serving certificate does not name %s", n)
		}
	}
	return ""
}

// issue makes what replaces old (nil: nothing usable) at now: a new serving certificate for dnsNames,
// signed by old's CA while that is not due, else by a new CA, with the old CA kept in the trusted
// bundle until it expires.
func issue(old *bundle, now time.Time, dnsNames []string) (*bundle, error) {
	b := &bundle{}
	if old != nil && now.Before(renewAt(old.caCert)) {
		b.caCert, b.caKey, b.caPEM = old.caCert, old.caKey, unexpired(old.caPEM, now)
	} else {
		if err := b.newCA(now); err != nil {
			return nil, err
		}
		if old != nil && now.Before(old.caCert.NotAfter) {
			b.caPEM = append(bytes.Clone(b.caPEM), pem.EncodeToMemory(&pem.Block{Type: pemCert, Bytes: old.caCert.Raw})...)
		}
	}
	if err := b.newServing(now, dnsNames); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bundle) newCA(now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("making the webhook CA key: %w", err)
	}
	tmpl, err := template(now, caLifetime)
	if err != nil {
		return err
	}
	tmpl.Subject = pkix.Name{CommonName: caSubject}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("signing the webhook CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("reading back the webhook CA: %w", err)
	}
	b.caCert, b.caKey, b.caPEM = cert, key, pem.EncodeToMemory(&pem.Block{Type: pemCert, Bytes: der})
	return nil
}

func (b *bundle) newServing(now time.Time, dnsNames []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("making the webhook serving key: %w", err)
	}
	tmpl, err := template(now, servingLifetime)
	if err != nil {
		return err
	}
	if tmpl.NotAfter.After(b.caCert.NotAfter) {
		tmpl.NotAfter = b.caCert.NotAfter
	}
	tmpl.Subject, tmpl.DNSNames = pkix.Name{CommonName: dnsNames[0]}, dnsNames
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.caCert, &key.PublicKey, b.caKey)
	if err != nil {
		return fmt.Errorf("signing the webhook serving certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the webhook serving key: %w", err)
	}
	b.servPEM = pem.EncodeToMemory(&pem.Block{Type: pemCert, Bytes: der})
	b.servKPEM = pem.EncodeToMemory(&pem.Block{Type: pemECKey, Bytes: kder})
	b.serving, err = tls.X509KeyPair(b.servPEM, b.servKPEM)
	if err != nil {
		return fmt.Errorf("reading back the webhook serving pair: %w", err)
	}
	return nil
}

// template is a certificate valid from a little before now for lifetime, with a random serial.
func template(now time.Time, lifetime time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("making a serial number: %w", err)
	}
	return &x509.Certificate{SerialNumber: serial, NotBefore: now.Add(-backdate), NotAfter: now.Add(lifetime)}, nil
}

// unexpired is the PEM certificates of caPEM still valid at now, in their order.
func unexpired(caPEM []byte, now time.Time) []byte {
	var out []byte
	for rest := caPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && now.Before(c.NotAfter) {
			out = append(out, pem.EncodeToMemory(block)...)
		}
	}
}

func firstCert(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != pemCert {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(pemBytes []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != pemECKey {
		return nil, errors.New("no PEM EC private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// DNSNames are the names a Service's clients may use for it; the API server uses <svc>.<ns>.svc.
func DNSNames(service, namespace string) []string {
	return []string{service + "." + namespace + ".svc", service, service + "." + namespace,
		service + "." + namespace + ".svc.cluster.local"}
}
