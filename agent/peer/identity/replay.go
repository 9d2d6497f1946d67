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

// Package identity is how node agents know each other on the peer port: each request carries the
// calling agent's own bound ServiceAccount token (audience Audience, a few minutes long, rotated by
// kubelet), a fresh nonce and a timestamp. The serving agent checks the token with a TokenReview
// (cached until shortly before the token expires), accepts only the agents' ServiceAccount, takes
// the caller's node from the review, and refuses a nonce it has seen or a timestamp outside the
// window. No key is shared between agents, and nothing secret is rendered by the chart.
package identity

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultWindow is how far a request's timestamp may be from the serving agent's clock, and so how
// long a nonce is remembered.
const DefaultWindow = 2 * time.Minute

// DefaultMaxNonces bounds the nonces remembered at once: far above what followers send within
// 2×DefaultWindow (a sync sends a few requests per object), small enough to cost a few MiB.
const DefaultMaxNonces = 100_000

// ErrReplay is a request whose nonce was seen already.
var ErrReplay = errors.New("this request was sent before (its nonce was seen)")

// ReplayGuard refuses a request whose nonce it has seen, or whose timestamp is outside Window of
// its clock. It remembers each nonce for 2×Window from when it was seen: a timestamp accepted now
// lies within Window of now, so after 2×Window the same request is refused as stale anyway. When
// Max nonces are remembered, new ones are refused until old ones expire (failing closed: forgetting
// one would let it be replayed). Only requests with a valid identity reach it (Verifier checks the
// token first), so strangers cannot fill it.
type ReplayGuard struct {
	// Window, Max and Now default to DefaultWindow, DefaultMaxNonces and time.Now.
	Window time.Duration
	Max    int
	Now    func() time.Time

	mu    sync.Mutex
	seen  map[string]time.Time
	order []seenNonce // by insertion, so by expiry
}

type seenNonce struct {
	nonce   string
	expires time.Time
}

func (g *ReplayGuard) window() time.Duration {
	if g.Window > 0 {
		return g.Window
	}
	return DefaultWindow
}

func (g *ReplayGuard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Check records nonce, sent at at, or says why the request is refused.
func (g *ReplayGuard) Check(nonce string, at time.Time) error {
	now, w := g.now(), g.window()
	if skew := now.Sub(at); skew > w || skew < -w {
		return fmt.Errorf("the request's timestamp is %s from this peer's clock (at most %s allowed)", skew.Round(time.Second), w)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]time.Time{}
	}
	g.expire(now)
	if _, ok := g.seen[nonce]; ok {
		return ErrReplay
	}
	limit := g.Max
	if limit <= 0 {
		limit = DefaultMaxNonces
	}
	if len(g.seen) >= limit {
		return errors.New("this peer remembers as many recent requests as it may: try again shortly")
	}
	exp := now.Add(2 * w)
	g.seen[nonce] = exp
	g.order = append(g.order, seenNonce{nonce, exp})
	return nil
}

// expire forgets the nonces whose time is past.
func (g *ReplayGuard) expire(now time.Time) {
	i := 0
	for ; i < len(g.order) && !g.order[i].expires.After(now); i++ {
		delete(g.seen, g.order[i].nonce)
	}
	// Slicing forward is amortized: the next append that outgrows the array copies only what is left.
	g.order = g.order[i:]
}

// Len is how many nonces are remembered (for tests and metrics).
func (g *ReplayGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}
