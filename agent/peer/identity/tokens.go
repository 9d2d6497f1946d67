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

package identity

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Review is what a TokenReview said of a token: whose it is, its node, and until when to believe it.
type Review struct {
	// Username is the ServiceAccount's user name, system:serviceaccount:NAMESPACE:NAME.
	Username string
	// Node is the node of the pod the token is bound to (the review's extra
	// authentication.kubernetes.io/node-name).
	Node string
	// Until is when the cache forgets the review.
	Until time.Time
}

// Cache bounds defaults: a positive review is kept at most MaxCacheTTL and forgotten CacheMargin
// before the token expires, so a revoked token (its pod deleted) stops working within minutes.
const (
	DefaultMaxTokens = 1024
	MaxCacheTTL      = 5 * time.Minute
	CacheMargin      = 30 * time.Second
)

// TokenCache keeps positive token reviews, keyed by the token's SHA-256 (it never holds a token).
// Negative ones are not kept: a refused caller costs a review each time, which the peer's client
// limit and the API server's own limits bound.
type TokenCache struct {
	// Max and Now default to DefaultMaxTokens and time.Now.
	Max int
	Now func() time.Time

	mu sync.Mutex
	m  map[[32]byte]Review
}

func (c *TokenCache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Get returns the cached review of token, if one is still good.
func (c *TokenCache) Get(token string) (Review, bool) {
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	if !ok {
		return Review{}, false
	}
	if !c.now().Before(r.Until) {
		delete(c.m, k)
		return Review{}, false
	}
	return r, true
}

// Put keeps r for token until CacheMargin before exp (the token's own expiry), at most MaxCacheTTL.
// A token without a known expiry, or about to expire, is not kept.
func (c *TokenCache) Put(token string, r Review, exp time.Time) {
	now := c.now()
	until := now.Add(MaxCacheTTL)
	if exp.IsZero() {
		return
	}
	if e := exp.Add(-CacheMargin); e.Before(until) {
		until = e
	}
	if !until.After(now) {
		return
	}
	r.Until = until
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]Review{}
	}
	limit := c.Max
	if limit <= 0 {
		limit = DefaultMaxTokens
	}
	if len(c.m) >= limit {
		c.evict(now, limit)
	}
	c.m[k] = r
}

// evict forgets expired reviews and, if the cache is still full, any others until one fits: the
// cache only saves reviews, so forgetting one costs a TokenReview, never a wrong answer.
func (c *TokenCache) evict(now time.Time, limit int) {
	for k, r := range c.m {
		if !now.Before(r.Until) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) < limit {
			return
		}
		delete(c.m, k)
	}
}

// Len is how many reviews are kept.
func (c *TokenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// expiry reads the exp claim of a JWT without checking it: it only bounds how long a review that the
// API server made is believed, never whether the token is believed.
func expiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 8<<10 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}
