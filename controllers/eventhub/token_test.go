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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/controllers/dataset"
)

// slowReader serves one Secret's token, and blocks every read while its gate is closed: an API server
// the manager's client waits for.
type slowReader struct {
	client.Reader
	token atomic.Value
	gate  chan struct{}
	reads atomic.Int32
}

func (r *slowReader) Get(ctx context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads.Add(1)
	select {
	case <-r.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	obj.(*corev1.Secret).Data = map[string][]byte{dataset.EventTokenKey: []byte(r.token.Load().(string))}
	return nil
}

// TestAStaleTokenNeverMakesAStoreWait checks that once a token was read, a webhook request never waits
// for the API server again: a stale token is answered from the cache while one background read
// refreshes it (stores post with a short timeout and do not retry).
func TestAStaleTokenNeverMakesAStoreWait(t *testing.T) {
	defer func(ttl time.Duration) { tokenTTL = ttl }(tokenTTL)
	tokenTTL = 10 * time.Millisecond
	r := &slowReader{gate: make(chan struct{})}
	r.token.Store("first-token")
	close(r.gate)
	h := New(Options{Reader: r})
	key := types.NamespacedName{Namespace: "ns", Name: "live"}
	h.watched[key] = &watched{kind: "webhook", tokenSecret: "hook-token"}
	get := func() string {
		t.Helper()
		tok, err := h.token(t.Context(), "ns/live")
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if tok := get(); tok != "first-token" {
		t.Fatalf("token %q", tok)
	}

	// The API server stalls and the token is rotated: requests go on with the cached token, at once,
	// and only one read is in flight.
	r.gate = make(chan struct{})
	r.token.Store("rotated-token")
	time.Sleep(2 * tokenTTL)
	reads := r.reads.Load()
	for range 20 {
		start := time.Now()
		if tok := get(); tok != "first-token" {
			t.Fatalf("token %q while the refresh waits", tok)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a request waited %s for the API server", d)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := r.reads.Load() - reads; n != 1 {
		t.Fatalf("%d reads of the Secret in flight, want 1", n)
	}
	close(r.gate)
	deadline := time.Now().Add(5 * time.Second)
	for get() != "rotated-token" {
		if time.Now().After(deadline) {
			t.Fatal("the rotated token was never read")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestATokenReadForAnOldSourceChangesNothing: a read of the token that lands after the Dataset's
// source was reconfigured (or forgotten) must not put the old token back in the cache.
func TestATokenReadForAnOldSourceChangesNothing(t *testing.T) {
	r := &slowReader{gate: make(chan struct{})}
	r.token.Store("old-token")
	close(r.gate)
	h := New(Options{Reader: r})
	key := types.NamespacedName{Namespace: "ns", Name: "live"}
	old := &watched{kind: "webhook", tokenSecret: "old-secret"}
	h.watched[key] = &watched{kind: "webhook", tokenSecret: "new-secret"}
	if _, err := h.readToken(t.Context(), key, old); err != nil {
		t.Fatal(err)
	}
	if c, ok := h.tokens[key]; ok {
		t.Fatalf("a read for the old source cached %q", c.token)
	}
	delete(h.watched, key)
	if _, err := h.readToken(t.Context(), key, old); err != nil {
		t.Fatal(err)
	}
	if len(h.tokens) != 0 {
		t.Fatalf("a read for a forgotten Dataset cached a token: %v", h.tokens)
	}
}
