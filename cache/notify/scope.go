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

package notify

import (
	"strings"
	"time"

	"github.com/pqcache/pqcache/cache/plan"
)

// Scope is the part of a bucket one Dataset mirrors, and which of it is fresh.
type Scope struct {
	Bucket string
	// Prefix is the source prefix, matched as a plain string prefix like the listing does.
	Prefix string
	// Filter holds the include/exclude globs, applied to keys relative to Prefix; nil selects all.
	Filter *plan.Filter
	// Fresh lists sub-prefixes of Prefix whose changes are flushed first (Dataset spec.fresh).
	Fresh []string
	// Window and MaxDelay, when set, replace the Debouncer's for this Dataset: a Dataset whose syncs
	// start cheaply batches less.
	Window, MaxDelay time.Duration
}

// NewScope builds a Scope from a Dataset's source and globs.
func NewScope(bucket, prefix string, include, exclude, fresh []string) (Scope, error) {
	f, err := plan.NewFilter(include, exclude)
	if err != nil {
		return Scope{}, err
	}
	return Scope{Bucket: bucket, Prefix: prefix, Filter: f, Fresh: fresh}, nil
}

// Rel returns c's key relative to the prefix and whether the Dataset mirrors it, by the rules of a
// listing sync: same bucket, under the prefix, selected by the globs, and not a directory marker.
func (s Scope) Rel(c Change) (string, bool) {
	if c.Bucket != s.Bucket || !strings.HasPrefix(c.Key, s.Prefix) {
		return "", false
	}
	rel := c.Key[len(s.Prefix):]
	if rel == "" || strings.HasSuffix(rel, "/") {
		return "", false
	}
	if s.Filter != nil && !s.Filter.Match(rel) {
		return "", false
	}
	return rel, true
}

// IsFresh reports whether a relative key lies under one of the fresh prefixes.
func (s Scope) IsFresh(rel string) bool {
	for _, p := range s.Fresh {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}
