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

package readers

import (
	"context"
	"slices"
	"strings"
)

// Served is one Dataset that a namespace reads through this node's endpoint: its copy on this node,
// and the bucket and prefix its files come from, which the endpoint serves them under.
type Served struct {
	// Dataset is the Dataset's name; a pin token names it.
	Dataset string
	// Bucket and Prefix are the Dataset's S3 source: its files' keys are Prefix + their paths.
	Bucket, Prefix string
	// Root is the copy's cache root on this node (generations under it).
	Root string
	// Region is the bucket's region, answered to GetBucketLocation; empty means us-east-1.
	Region string
	// Source names the Dataset's source as its syncs record it in each generation (cache.SourceID):
	// a generation copied from another source is not served under this one's keys. Empty: not
	// checked.
	Source string
}

// Catalog says which Datasets each namespace reads from this node.
type Catalog interface {
	// Served lists the Datasets of namespace whose copies this node holds.
	Served(ctx context.Context, namespace string) []Served
}

// CatalogFunc is a Catalog.
type CatalogFunc func(ctx context.Context, namespace string) []Served

// Served calls f.
func (f CatalogFunc) Served(ctx context.Context, namespace string) []Served { return f(ctx, namespace) }

// inBucket are the Datasets of served that read bucket, longest prefix first (the order a key's
// owner is looked for in).
func inBucket(served []Served, bucket string) []Served {
	var out []Served
	for _, s := range served {
		if s.Bucket == bucket {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Served) int { return len(b.Prefix) - len(a.Prefix) })
	return out
}

// owner is the Dataset whose files hold key: the one with the longest prefix of it.
func owner(served []Served, key string) (Served, bool) {
	for _, s := range served { // longest prefix first
		if strings.HasPrefix(key, s.Prefix) && len(key) > len(s.Prefix) {
			return s, true
		}
	}
	return Served{}, false
}

// prefixes names the prefixes served, for a message.
func prefixes(served []Served) string {
	names := make([]string, len(served))
	for i, s := range served {
		names[i] = "s3://" + s.Bucket + "/" + s.Prefix + " (Dataset " + s.Dataset + ")"
	}
	return strings.Join(names, ", ")
}
