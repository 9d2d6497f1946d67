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

package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// Rewriter rewrites one object of the bucket in place, same bytes, new version (s3store.Store does,
// with a copy onto itself).
type Rewriter interface {
	Rewrite(ctx context.Context, key string, stamp time.Time) error
}

// Refresher keeps a bucket changing while a run's queries read it: every Every, it rewrites the
// next Percent of Keys (in order, wrapping around), so that each period a different share of the
// files the workload names gets a new ETag and the Dataset's next sync copies it again. The bytes do
// not change, so neither do the queries' digests: what the run measures is the cost of refreshes
// going on beside the queries.
type Refresher struct {
	Store   Rewriter
	Keys    []string
	Percent int
	Every   time.Duration
	// Now stamps the rewrites (time.Now when nil).
	Now func() time.Time
	// Classify names a refused rewrite's reason (s3store.Classify), for the result.
	Classify func(error) string
}

// batch is how many keys one period rewrites: Percent of them, at least one.
func (r *Refresher) batch() int {
	return min(len(r.Keys), max(1, len(r.Keys)*r.Percent/100))
}

// Run rewrites until ctx ends; the first period starts at once, so that even a short run overlaps a
// refresh. A refused rewrite (no write access, a missing key) stops it: the result says why, and a
// run that asked to be measured during refreshes must not pass for one. It returns what it did.
func (r *Refresher) Run(ctx context.Context) *wire.RefreshResult {
	res := &wire.RefreshResult{Percent: r.Percent, EveryMillis: r.Every.Milliseconds(), Files: len(r.Keys)}
	if len(r.Keys) == 0 {
		res.Error, res.ErrorReason = "the workload names no file to rewrite", wire.ReasonRefreshRefused
		return res
	}
	keys := slices.Clone(r.Keys)
	slices.Sort(keys)
	now := r.Now
	if now == nil {
		now = time.Now
	}
	tick := time.NewTicker(max(r.Every, time.Second))
	defer tick.Stop()
	next := 0
	for {
		for range r.batch() {
			err := r.Store.Rewrite(ctx, keys[next], now())
			switch {
			case err == nil:
				res.Rewrites++
				next = (next + 1) % len(keys)
			case ctx.Err() != nil:
				return res // the queries ended: a rewrite cut short is no failure
			default:
				res.Error, res.ErrorReason = fmt.Sprintf("rewriting the workload's files needs write access to the bucket: %v", err), r.reason(err)
				return res
			}
			if ctx.Err() != nil {
				return res
			}
		}
		res.Rounds++
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
	}
}

// reason classifies a refused rewrite: what the store said, else RefreshRefused.
func (r *Refresher) reason(err error) string {
	if r.Classify != nil {
		if c := r.Classify(err); c == wire.ReasonAccessDenied || c == wire.ReasonInvalidCredentials || c == wire.ReasonNoSuchBucket {
			return c
		}
	}
	return wire.ReasonRefreshRefused
}
