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

package s3store

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testSetting = "endpoints.deniedCIDRs denies (allow it with endpoints.allowedCIDRs)"

// TestDialGuardRefusesADeniedRange: a store whose endpoint resolves into a denied range is never
// connected to, and the error names the setting; an allowed range inside the denied one passes. The
// endpoint is a name (localhost), so the check is on the resolved address, not on the URL.
func TestDialGuardRefusesADeniedRange(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
			`<Name>bkt</Name><Prefix>p/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
	}))
	defer srv.Close()
	endpoint := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	guarded := func(denied, allowed []string) *Store {
		g, err := NewDialGuard(denied, allowed, testSetting)
		if err != nil {
			t.Fatal(err)
		}
		st, err := New(t.Context(), Config{Bucket: "bkt", Region: "us-east-1", Endpoint: endpoint, PathStyle: true,
			Credentials: &Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, HTTPClient: g.Guard(NewHTTPClient(DefaultClientTimeouts))})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	start := time.Now()
	err := listOnce(guarded([]string{"127.0.0.0/8", "::1/128"}, nil))
	if !errors.Is(err, ErrEndpointDenied) {
		t.Fatalf("a listing from a denied range: %v, want ErrEndpointDenied", err)
	}
	if !strings.Contains(err.Error(), "endpoints.deniedCIDRs") || !strings.Contains(err.Error(), "endpoints.allowedCIDRs") {
		t.Errorf("the error does not name the setting: %v", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the denied endpoint got %d requests", hits.Load())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a denied address was retried for %s: it never changes its answer", d)
	}

	if err := listOnce(guarded([]string{"127.0.0.0/8", "::1/128"}, []string{"127.0.0.1", "::1"})); err != nil {
		t.Errorf("a listing from an allowed address in a denied range: %v", err)
	}
	if err := listOnce(guarded([]string{"169.254.0.0/16", "fe80::/10"}, nil)); err != nil {
		t.Errorf("a listing from a range not denied: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("the endpoint got %d requests, want 2", hits.Load())
	}
}

func TestDialGuardCheck(t *testing.T) {
	g, err := NewDialGuard([]string{"169.254.0.0/16", "fe80::/10", "10.96.0.0/12"}, []string{"10.96.5.0/24"}, testSetting)
	if err != nil {
		t.Fatal(err)
	}
	for ip, denied := range map[string]bool{
		"169.254.169.254": true, "::ffff:169.254.169.254": true, "fe80::1": true, "10.100.0.1": true,
		"10.96.5.7": false, "10.0.0.1": false, "8.8.8.8": false, "127.0.0.1": false, "2001:db8::1": false,
	} {
		err := g.Check(netip.MustParseAddr(ip))
		if got := errors.Is(err, ErrEndpointDenied); got != denied {
			t.Errorf("%s: denied %v (%v), want %v", ip, got, err, denied)
		}
	}
	if g, err := NewDialGuard(nil, []string{"10.0.0.0/8"}, ""); g != nil || err != nil {
		t.Errorf("no denied range: %v, %v; want no guard", g, err)
	}
	if _, err := NewDialGuard([]string{"10.0.0.0/33"}, nil, ""); err == nil {
		t.Error("a bad range was accepted")
	}
	var none *DialGuard
	if err := none.Check(netip.MustParseAddr("169.254.169.254")); err != nil {
		t.Errorf("a nil guard denied: %v", err)
	}
}
