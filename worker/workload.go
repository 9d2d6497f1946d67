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

package worker

import (
	"context"
	"slices"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// benchSource is where a bench run's tables are: the data root and, for a mixed input, the root of
// its fresh prefixes; each a directory or a bucket prefix.
func benchSource(ctx context.Context, a wire.BenchArgs) (workload.Source, error) {
	data, err := lister(ctx, a.Data, a.S3Access)
	if err != nil {
		return workload.Source{}, err
	}
	src := workload.Source{Data: data}
	if strings.HasPrefix(a.Data, "s3://") || strings.HasPrefix(a.FreshData, "s3://") {
		s3 := a.S3Access
		src.S3 = &s3
	}
	if a.FreshData != "" && len(a.FreshPrefixes) > 0 {
		if src.Fresh, err = lister(ctx, a.FreshData, a.S3Access); err != nil {
			return workload.Source{}, err
		}
		src.FreshPrefixes = a.FreshPrefixes
	}
	return src, nil
}

// lister reads a directory, or the objects under an s3:// prefix.
func lister(ctx context.Context, root string, s3 wire.S3Access) (workload.Lister, error) {
	if !strings.HasPrefix(root, "s3://") {
		return workload.Dir(root), nil
	}
	store, prefix, err := prefixStore(ctx, root, s3)
	if err != nil {
		return nil, err
	}
	return s3Lister{store: store, prefix: prefix}, nil
}

// s3Lister lists a bucket prefix for workload.Resolve: one paginated listing per table path.
type s3Lister struct {
	store  *s3store.Store
	prefix string
}

func (l s3Lister) List(ctx context.Context, dir string) ([]string, error) {
	p := l.prefix
	if dir != "" {
		p += strings.TrimSuffix(dir, "/") + "/"
	}
	var rels []string
	err := l.store.List(ctx, p, l.prefix, func(objs []plan.Object) error {
		for _, o := range objs {
			if !strings.HasSuffix(o.Key, "/") && !slices.Contains(strings.Split(o.Key, "/"), ".pqcache") {
				rels = append(rels, o.Key)
			}
		}
		return nil
	})
	return rels, err
}

func (l s3Lister) Exists(ctx context.Context, rel string) (bool, error) {
	_, ok, err := l.store.Describe(ctx, l.prefix+rel, l.prefix)
	return ok, err
}

func (l s3Lister) Location(rel string) string {
	return "s3://" + l.store.Bucket() + "/" + l.prefix + rel
}
