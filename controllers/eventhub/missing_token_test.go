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

package eventhub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// countingReader counts the reads of one Secret through the reader it wraps.
type countingReader struct {
	client.Reader
	secret string
	reads  atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok && key.Name == r.secret {
		r.reads.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestAMissingTokenSecretIsReadOncePerInterval: posts for a Dataset whose token Secret is missing are
// refused without an API read each (anyone who can reach the endpoint could otherwise turn posts
// into API requests); a Secret created later is read, and its token accepted, within the interval.
func TestAMissingTokenSecretIsReadOncePerInterval(t *testing.T) {
	defer func(ttl time.Duration) { missingTokenTTL = ttl }(missingTokenTTL)
	missingTokenTTL = time.Second
	counter := &countingReader{secret: "absent-token"}
	e := startWith(t, envOptions{reader: func(r client.Reader) client.Reader { counter.Reader = r; return counter }})
	e.dataset("tokenless", datav1alpha1.EventSource{Webhook: &datav1alpha1.WebhookEventSource{
		TokenSecretRef: &datav1alpha1.SecretReference{Name: "absent-token"}}})
	url := "http://" + e.hub.Addr() + "/events/" + e.ns + "/tokenless"
	post := func(tok string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(s3Event("tpch/x.parquet", false, time.Now())))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	e.eventually("the hub watches the Dataset", 10*time.Second, func() error {
		e.hub.mu.Lock()
		defer e.hub.mu.Unlock()
		if e.hub.watched[client.ObjectKey{Namespace: e.ns, Name: "tokenless"}] == nil {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	start := counter.reads.Load()
	for range 50 {
		if code := post("guess"); code != http.StatusUnauthorized {
			t.Fatalf("a post without a token Secret answered %d, want 401", code)
		}
	}
	if n := counter.reads.Load() - start; n > 2 {
		t.Fatalf("50 posts read the missing Secret %d times, want at most 2", n)
	}

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "absent-token"}, StringData: map[string]string{"token": "now-here"}}
	if err := e.c.Create(e.ctx, sec); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	e.eventually("a post with the new token is accepted", 5*time.Second, func() error {
		if code := post("now-here"); code != http.StatusOK {
			return fmt.Errorf("answered %d", code)
		}
		return nil
	})
	if d := time.Since(created); d > 2*missingTokenTTL {
		t.Errorf("the new Secret was picked up after %s, want within %s", d, missingTokenTTL)
	}
}
