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
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// ClientTimeouts bound the waits of a client to a store (a tenant's bucket, a peer): a store that
// accepts a connection and then says nothing must not hold a transfer slot, or one of the agent's
// workers, for ever. There is no overall timeout: the body of a large object may take long to stream,
// and the sync's context ends it.
type ClientTimeouts struct {
	// Dial bounds a TCP connect.
	Dial time.Duration
	// TLSHandshake bounds a TLS handshake.
	TLSHandshake time.Duration
	// ResponseHeader bounds the wait for a response's headers once the request is sent.
	ResponseHeader time.Duration
}

// DefaultClientTimeouts are the agent's: generous for a store far away and busy, short beside a sync.
var DefaultClientTimeouts = ClientTimeouts{Dial: 10 * time.Second, TLSHandshake: 10 * time.Second, ResponseHeader: 30 * time.Second}

// MaxRedirects is how many redirects, all to the request's own host, a request follows.
const MaxRedirects = 3

// errRedirect: the store redirected a request elsewhere, or too often.
var errRedirect = errors.New("refused redirect")

// NewHTTPClient returns a client for stores with timeouts t, that follows redirects only to the
// request's own host (a signed request sent to another host hands it the signature and the tenant's
// request), at most MaxRedirects of them. It is the SDK's buildable client (the SDK adds a custom CA
// bundle to no other kind); the redirect check is in the transport's proxy function, which sees
// every request, redirected ones included, and compares it with the host that Store's requests put
// into their context (see guardRedirects).
func NewHTTPClient(t ClientTimeouts) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = t.Dial }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = t.TLSHandshake
			tr.ResponseHeaderTimeout = t.ResponseHeader
			next := tr.Proxy
			tr.Proxy = func(r *http.Request) (*url.URL, error) {
				if err := checkRedirect(r); err != nil {
					return nil, err
				}
				if next == nil {
					return nil, nil
				}
				return next(r)
			}
		})
}

// redirectGuard is the host a request was first sent to and how many times it was sent.
type redirectGuard struct {
	host  string
	sends atomic.Int32
}

type redirectGuardKey struct{}

// guardRedirects returns r with a fresh redirectGuard for its host in its context; the redirects of
// r keep r's context.
func guardRedirects(r *http.Request) *http.Request {
	g := &redirectGuard{host: r.URL.Host}
	return r.WithContext(context.WithValue(r.Context(), redirectGuardKey{}, g))
}

// checkRedirect refuses a request sent to another host than its guard's, or sent more than
// MaxRedirects times after the first.
func checkRedirect(r *http.Request) error {
	g, _ := r.Context().Value(redirectGuardKey{}).(*redirectGuard)
	if g == nil {
		return nil
	}
	if r.URL.Host != g.host {
		return fmt.Errorf("%w: from %s to another host, %s", errRedirect, g.host, r.URL.Host)
	}
	if g.sends.Add(1) > MaxRedirects+1 {
		return fmt.Errorf("%w: more than %d redirects", errRedirect, MaxRedirects)
	}
	return nil
}
