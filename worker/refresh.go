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
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/s3store"
)

// refreshRun is a refresher running beside a bench run's queries, and the volume it watches.
type refreshRun struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	res    *wire.RefreshResult
	// root is the cache root whose generations are counted (empty: the data is not a volume).
	root string
}

// startRefresh starts rewriting the workload's files in the bucket (--during-refresh) until stop is
// called; without --during-refresh it returns nil, whose stop does nothing. lease is the generation the queries hold, if the data is one: every query reads it whole,
// whatever the syncs that the rewrites cause publish meanwhile.
func startRefresh(ctx context.Context, a wire.BenchArgs, resolved *workload.Resolved, lease *generations.Lease) (*refreshRun, error) {
	if !a.DuringRefresh {
		return nil, nil
	}
	if a.RefreshPercent < 1 || a.RefreshPercent > 100 {
		return nil, fmt.Errorf("--refresh-percent must be 1-100, not %d", a.RefreshPercent)
	}
	source := a.RefreshSource
	if source == "" && strings.HasPrefix(a.Data, "s3://") {
		source = a.Data
	}
	if source == "" {
		return nil, errors.New("--during-refresh needs --refresh-source s3://BUCKET/PREFIX, the bucket the data is a copy of")
	}
	bucket, prefix, err := wire.ParseS3URL(source)
	if err != nil {
		return nil, fmt.Errorf("--refresh-source: %w", err)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	store, _, err := NewStore(ctx, s3store.Config{Bucket: bucket, Region: a.Region, Endpoint: a.Endpoint, PathStyle: a.PathStyle})
	if err != nil {
		return nil, err
	}
	rf := &bench.Refresher{Store: store, Keys: refreshKeys(resolved, a.Data, prefix), Percent: a.RefreshPercent, Every: a.RefreshEvery, Classify: s3store.Classify}
	run := &refreshRun{}
	if lease != nil && lease.Generation > 0 {
		// DIR/.pqcache/generations/<g>: the cache root is three levels up.
		run.root = filepath.Dir(filepath.Dir(filepath.Dir(lease.Dir)))
	}
	first := run.generation()
	rctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	run.wg.Go(func() {
		run.res = rf.Run(rctx)
		run.res.FirstGeneration = first
		if lease != nil {
			run.res.ReadGeneration = lease.Generation
		}
	})
	return run, nil
}

// generation is the newest generation the volume has, or 0.
func (r *refreshRun) generation() int64 {
	if r.root == "" {
		return 0
	}
	g, err := generations.Highest(r.root)
	if err != nil {
		return 0
	}
	return g
}

// stop ends the rewrites (the queries are done), records what they did in res (if the run has one)
// and says it on w.
func (r *refreshRun) stop(res *wire.BenchResult, w io.Writer) {
	if r == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
	rr := r.res
	rr.LastGeneration = r.generation()
	if res != nil {
		res.Refresh = rr
	}
	fmt.Fprintf(w, "during refresh: %d rewrites of %d files in %d rounds; generations %d to %d, read %d\n",
		rr.Rewrites, rr.Files, rr.Rounds, rr.FirstGeneration, rr.LastGeneration, rr.ReadGeneration)
}

// refreshFailure fails a run whose rewrites were refused: its times are written, but they were not
// measured during refreshes.
func refreshFailure(res *wire.BenchResult) error {
	if rr := res.Refresh; rr != nil && rr.Error != "" {
		return fmt.Errorf("%s: %s", rr.ErrorReason, rr.Error)
	}
	return nil
}

// refreshKeys are the bucket keys of the workload's files under data: each file's path under data,
// below the bucket prefix it is a copy of. Files elsewhere (fresh prefixes staged apart) are left
// alone.
func refreshKeys(resolved *workload.Resolved, data, prefix string) []string {
	var keys []string
	for _, t := range resolved.Tables {
		for _, f := range t.Files {
			var rel string
			if strings.HasPrefix(data, "s3://") {
				root := strings.TrimSuffix(data, "/") + "/"
				if !strings.HasPrefix(f, root) {
					continue
				}
				rel = strings.TrimPrefix(f, root)
			} else {
				r, err := filepath.Rel(data, f)
				if err != nil || r == ".." || strings.HasPrefix(r, "../") {
					continue
				}
				rel = filepath.ToSlash(r)
			}
			keys = append(keys, prefix+rel)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
