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
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var names = DNSNames("pq-webhook", "pqcache-system")

func TestIssueRenewsAtTwoThirdsAndKeepsTheCA(t *testing.T) {
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	b, err := issue(nil, start, names)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseBundle(b.data())
	if err != nil {
		t.Fatalf("a bundle does not read back: %v", err)
	}
	if why := back.due(start, names); why != "" {
		t.Fatalf("a new bundle is due: %s", why)
	}
	if why := back.due(start, DNSNames("other", "pqcache-system")); !strings.Contains(why, "does not name") {
		t.Fatalf("a certificate for another Service is not due: %q", why)
	}
	later := start.Add(servingLifetime * 2 / 3)
	if why := back.due(later, names); !strings.Contains(why, "serving certificate is due") {
		t.Fatalf("at two thirds of its life: %q", why)
	}
	renewed, err := issue(back, later, names)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.caCert.Equal(back.caCert) || string(renewed.caPEM) != string(back.caPEM) {
		t.Fatal("renewing the serving certificate replaced a CA that is not due")
	}
	if renewed.serving.Leaf.SerialNumber.Cmp(back.serving.Leaf.SerialNumber) == 0 {
		t.Fatal("renewal kept the serving certificate")
	}
	verify(t, renewed.caPEM, renewed, later)
}

func TestANewCATrustsTheOldUntilItExpires(t *testing.T) {
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	first, err := issue(nil, start, names)
	if err != nil {
		t.Fatal(err)
	}
	caDue := start.Add(caLifetime * 2 / 3)
	old, err := issue(first, caDue.Add(-24*time.Hour), names) // serving certificates were renewed all along
	if err != nil {
		t.Fatal(err)
	}
	if why := old.due(caDue, names); !strings.Contains(why, "CA is due") {
		t.Fatalf("at two thirds of the CA's life: %q", why)
	}
	next, err := issue(old, caDue, names)
	if err != nil {
		t.Fatal(err)
	}
	if next.caCert.Equal(old.caCert) {
		t.Fatal("the CA was not replaced")
	}
	// The API server trusts both: replicas that still serve the old CA's certificate keep working.
	verify(t, next.caPEM, next, caDue)
	verify(t, next.caPEM, old, caDue)
	// Once the old CA has expired, the next renewal drops it.
	after, err := issue(next, old.caCert.NotAfter.Add(time.Hour), names)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(after.caPEM), "BEGIN CERTIFICATE"); n != 1 {
		t.Fatalf("%d CA certificates trusted after the old CA expired, want 1", n)
	}
}

func TestParseBundleRefusesMismatchedParts(t *testing.T) {
	a, _ := issue(nil, time.Now(), names)
	b, _ := issue(nil, time.Now(), names)
	for name, data := range map[string]map[string][]byte{
		"empty":                    {},
		"serving pair of other CA": mix(a.data(), b.data(), keyCert, keyKey),
		"CA key of other CA":       mix(a.data(), b.data(), keyCAKey),
		"garbage CA":               mix(a.data(), map[string][]byte{keyCA: []byte("not PEM")}, keyCA),
	} {
		if _, err := parseBundle(data); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func mix(base, from map[string][]byte, keys ...string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range base {
		out[k] = v
	}
	for _, k := range keys {
		out[k] = from[k]
	}
	return out
}

// verify checks that b's serving certificate chains to a CA in caPEM for the Service's name, at now.
func verify(t *testing.T, caPEM []byte, b *bundle, now time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("caBundle holds no certificate")
	}
	if _, err := b.serving.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: names[0], CurrentTime: now}); err != nil {
		t.Fatalf("serving certificate does not verify: %v", err)
	}
}
