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

package peer

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pqcache/pqcache/cache/s3store"
)

// TestAPeerThatNeverAnswersIsGivenUp: a peer that takes the request and never sends the response's
// headers fails the follower's listing within the response-header timeout (shortened here), so that
// the follower falls back to the bucket instead of holding its slot for ever.
func TestAPeerThatNeverAnswersIsGivenUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	saved := peerHTTP
	peerHTTP = s3store.NewHTTPClient(s3store.ClientTimeouts{Dial: time.Second, TLSHandshake: time.Second, ResponseHeader: 200 * time.Millisecond})
	defer func() { peerHTTP = saved }()
	st, err := NewStore(t.Context(), srv.URL, Key{ID: "a", Secret: "b"}, "ns.ds")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = st.ListPages(t.Context(), Prefix(1), Prefix(1), func(s3store.Page) error { return nil })
	if err == nil {
		t.Fatal("the listing succeeded")
	}
	// Two attempts (clientAttempts) of 200ms, a backoff of at most a second between them.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the listing failed after %s (%v)", d, err)
	}
}
