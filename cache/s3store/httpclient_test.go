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
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// storeAt is a Store for bucket bkt at endpoint, through NewHTTPClient(t), with one attempt per request.
func storeAt(tb testing.TB, endpoint string, t ClientTimeouts) *Store {
	tb.Helper()
	st, err := New(tb.Context(), Config{Bucket: "bkt", Region: "us-east-1", Endpoint: endpoint, PathStyle: true, MaxAttempts: 1,
		Credentials: &Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, HTTPClient: NewHTTPClient(t)})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

func listOnce(st *Store) error {
	return st.ListPages(context.Background(), "p/", "p/", func(Page) error { return nil })
}

// TestAStoreThatNeverAnswersTimesOut: an endpoint that accepts the request and never sends the
// response's headers fails the request within the response-header timeout.
func TestAStoreThatNeverAnswersTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	st := storeAt(t, srv.URL, ClientTimeouts{Dial: time.Second, TLSHandshake: time.Second, ResponseHeader: 300 * time.Millisecond})
	start := time.Now()
	err := listOnce(st)
	if err == nil {
		t.Fatal("the listing succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the listing failed after %s, want about the 300ms header timeout (%v)", d, err)
	}
}

// TestARedirectToAnotherHostIsRefused: a store that redirects to another host does not get the
// request (nor its signature) sent there; a redirect to the same host is followed.
func TestARedirectToAnotherHostIsRefused(t *testing.T) {
	var elsewhere atomic.Int32
	var sameHost atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved") {
			w.Header().Set("Content-Type", "application/xml")
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
				`<Name>same</Name><Prefix>p/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
			return
		}
		if r.URL.Query().Get("prefix") == "p/" {
			target := other.URL
			if sameHost.Load() {
				target = ""
			}
			http.Redirect(w, r, target+"/moved"+r.URL.Path+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	st := storeAt(t, srv.URL, DefaultClientTimeouts)
	if err := listOnce(st); err == nil {
		t.Error("a redirect to another host was followed")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
	sameHost.Store(true)
	if err := listOnce(st); err != nil {
		t.Errorf("a redirect to the same host: %v", err)
	}
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
	}))
	defer loop.Close()
	if err := listOnce(storeAt(t, loop.URL, DefaultClientTimeouts)); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("a redirect loop: %v, want more than %d redirects refused", err, MaxRedirects)
	}
}
