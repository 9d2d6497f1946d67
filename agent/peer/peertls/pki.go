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

// Package peertls gives node agents TLS between each other from what every cluster has: each agent
// asks for its serving certificate with a CertificateSigningRequest (certificates.k8s.io/v1) for
// SignerName, with a key made in memory that never leaves it; the manager approves a request only
// when it comes from an agent and names that agent's own node and pod IP, and signs it with a CA
// that it makes at run time and keeps in a Secret of its namespace (never rendered by the chart),
// publishing the CA certificate in a ConfigMap that agents trust. This file is the X.509 part, with
// no Kubernetes in it.
package peertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// SignerName is the signer of the agents' peer certificates; the manager signs for no other.
const SignerName = "pqcache.dev/peer"

// Certificate lifetimes: the CA's, long, because agents read it from a ConfigMap and a new one
// means every agent's certificate is asked for again; an agent's, a day, renewed at two thirds.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	DefaultLifetime = 24 * time.Hour
	MinLifetime     = 10 * time.Minute
)

// CommonName is the subject an agent's certificate names: its node.
func CommonName(node string) string { return "system:pqcache-peer:" + node }

// CA signs agents' certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// NewCA makes a CA: an ECDSA P-256 key and a self-signed certificate. It returns both as PEM.
func NewCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("making the peer CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "pqcache peer CA"},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(CALifetime), IsCA: true, BasicConstraintsValid: true,
		MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the peer CA: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the peer CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// ParseCA reads a CA that NewCA made.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("the peer CA is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the peer CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the peer CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the peer CA key does not match its certificate")
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// Sign issues a serving certificate for req, valid from now for lifetime (DefaultLifetime when 0,
// at least MinLifetime), never past the CA's own end.
func (ca *CA) Sign(req *x509.CertificateRequest, now time.Time, lifetime time.Duration) ([]byte, error) {
	if lifetime == 0 || lifetime > DefaultLifetime {
		lifetime = DefaultLifetime
	}
	lifetime = max(lifetime, MinLifetime)
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	end := now.Add(lifetime)
	if end.After(ca.Cert.NotAfter) {
		end = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: req.Subject.CommonName},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: end, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing a peer certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("making a serial number: %w", err)
	}
	return n, nil
}

// NewRequest makes an agent's key (ECDSA P-256, in memory only) and its certificate request for
// node, with ips as its IP SANs and, as DNS SANs, the node's name and serviceNames (the names of the
// readers' Service, which every agent serves behind).
func NewRequest(node string, ips []net.IP, serviceNames ...string) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("making the peer key: %w", err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: CommonName(node)}, DNSNames: append([]string{node}, serviceNames...), IPAddresses: ips}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("making the peer certificate request: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseRequest reads a PEM certificate request and checks its signature.
func ParseRequest(b []byte) (*x509.CertificateRequest, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("the request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the certificate request's signature: %w", err)
	}
	return req, nil
}

// CheckRequest says why req may not be signed for an agent on node whose pod has podIPs: it must
// name that node (subject and first DNS SAN), then only DNS names of serviceNames, each once, only
// IPs of that pod, at least one, and nothing else.
func CheckRequest(req *x509.CertificateRequest, node string, podIPs []net.IP, serviceNames ...string) error {
	if node == "" {
		return errors.New("the requester's token names no node")
	}
	if req.Subject.CommonName != CommonName(node) {
		return fmt.Errorf("the subject %q is not %q", req.Subject.CommonName, CommonName(node))
	}
	if len(req.DNSNames) == 0 || req.DNSNames[0] != node {
		return fmt.Errorf("the DNS names %v do not begin with the node's name %s", req.DNSNames, node)
	}
	for i, name := range req.DNSNames[1:] {
		if !slices.Contains(serviceNames, name) || slices.Contains(req.DNSNames[1:i+1], name) {
			return fmt.Errorf("the DNS name %q is not one of the readers' Service %v, or is named twice", name, serviceNames)
		}
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("the request names e-mail addresses or URIs")
	}
	if len(req.IPAddresses) == 0 {
		return errors.New("the request names no IP address")
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(podIPs, ip.Equal) {
			return fmt.Errorf("%s is not an IP of the requester's pod %v", ip, podIPs)
		}
	}
	if _, ok := req.PublicKey.(*ecdsa.PublicKey); !ok {
		return errors.New("the key is not ECDSA")
	}
	return nil
}

// nextCert returns the DER of the first CERTIFICATE block in b, and what follows it.
func nextCert(b []byte) (der, rest []byte) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, nil
		}
		if blk.Type == "CERTIFICATE" {
			return blk.Bytes, b
		}
	}
}

// ServiceDNSNames are the names a Service is reached by inside the cluster: name, name.namespace,
// name.namespace.svc and name.namespace.svc.<clusterDomain>.
func ServiceDNSNames(namespace, name, clusterDomain string) []string {
	return []string{name, name + "." + namespace, name + "." + namespace + ".svc", name + "." + namespace + ".svc." + clusterDomain}
}
