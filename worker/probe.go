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
	"io"
	"slices"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// probeSource is what a throughput probe of data reads: the objects under an s3:// prefix, read with
// the same endpoint flags and credentials as the Polars engine, or a directory's files.
func probeSource(ctx context.Context, data string, s wire.S3Access) (bench.ProbeSource, error) {
	if !strings.HasPrefix(data, "s3://") {
		return bench.DirSource(data), nil
	}
	store, prefix, err := prefixStore(ctx, data, s)
	if err != nil {
		return nil, err
	}
	return s3Source{store: store, prefix: prefix}, nil
}

// s3Source is the objects under a bucket prefix, each read with one GET of the whole object: how an
// engine scanning s3:// without a cache reads, minus the engine.
type s3Source struct {
	store  *s3store.Store
	prefix string
}

// Files lists the prefix's objects in key order, leaving out "directory" markers (keys ending in /)
// and the cache's own bookkeeping under .pqcache/, as the directory probe does.
func (s s3Source) Files(ctx context.Context) ([]string, error) {
	var keys []string
	err := s.store.List(ctx, s.prefix, "", func(objs []plan.Object) error {
		for _, o := range objs {
			if strings.HasSuffix(o.Key, "/") || slices.Contains(strings.Split(o.Key, "/"), ".pqcache") {
				continue
			}
			keys = append(keys, o.Key)
		}
		return nil
	})
	return keys, err
}

// Open GETs a whole object; the probe closes the body early when it has read its fill.
func (s s3Source) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	body, _, err := s.store.Get(ctx, key, "", s3store.Whole)
	return body, err
}

// ProbeInput is the probe source of a bench run's input: the data, or for a mixed input (fresh
// prefixes read from elsewhere) both paths.
func ProbeInput(ctx context.Context, data, freshData string, freshPrefixes []string, s wire.S3Access) (bench.ProbeSource, error) {
	static, err := probeSource(ctx, data, s)
	if err != nil || freshData == "" || len(freshPrefixes) == 0 {
		return static, err
	}
	fresh, err := probeSource(ctx, freshData, s)
	if err != nil {
		return nil, err
	}
	root := func(src string) string {
		if _, prefix, err := wire.ParseS3URL(src); err == nil && strings.HasPrefix(src, "s3://") {
			return prefix
		}
		return src
	}
	return bench.MixedSource{Static: static, Fresh: fresh, StaticRoot: root(data), FreshRoot: root(freshData), Prefixes: freshPrefixes}, nil
}
