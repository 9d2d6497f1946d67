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
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"testing"
	"time"
)

// FuzzCheckRequest: any bytes as a CSR's request. What the signer's check admits names the
// requester's node first, then only names of the readers' Service, and only its pod's IPs, and the
// certificate signed for it verifies under the CA for that IP and for nothing the request did not
// name.
func FuzzCheckRequest(f *testing.F) {
	_, good, err := NewRequest("node-a", []net.IP{net.ParseIP("10.0.0.5")})
	if err != nil {
		f.Fatal(err)
	}
	_, other, _ := NewRequest("node-b", []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("10.0.0.6")})
	_, withService, _ := NewRequest("node-a", []net.IP{net.ParseIP("10.0.0.5")}, "pqcache-s3", "pqcache-s3.pqcache-system.svc", "evil.example")
	f.Add(good)
	f.Add(other)
	f.Add(withService)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	now := time.Unix(2_000_000_000, 0)
	caPEM, keyPEM, err := NewCA(now)
	if err != nil {
		f.Fatal(err)
	}
	ca, err := ParseCA(caPEM, keyPEM)
	if err != nil {
		f.Fatal(err)
	}
	podIPs := []net.IP{net.ParseIP("10.0.0.5")}
	readers := ServiceDNSNames("pqcache-system", "pqcache-s3", "cluster.local")
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseRequest(b)
		if err != nil || CheckRequest(req, "node-a", podIPs, readers...) != nil {
			return
		}
		if req.DNSNames[0] != "node-a" || slices.ContainsFunc(req.DNSNames[1:], func(n string) bool { return !slices.Contains(readers, n) }) ||
			len(req.IPAddresses) == 0 || req.Subject.CommonName != CommonName("node-a") {
			t.Fatalf("admitted %v %v %q", req.DNSNames, req.IPAddresses, req.Subject.CommonName)
		}
		certPEM, err := ca.Sign(req, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(certPEM)
		leaf, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		opts := x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := leaf.Verify(opts); err != nil {
			t.Fatalf("the signed certificate does not verify: %v", err)
		}
		if leaf.VerifyHostname("10.0.0.5") != nil || leaf.VerifyHostname("10.0.0.6") == nil || leaf.VerifyHostname("node-b") == nil ||
			leaf.VerifyHostname("evil.example") == nil {
			t.Fatalf("the certificate names %v %v", leaf.DNSNames, leaf.IPAddresses)
		}
	})
}
