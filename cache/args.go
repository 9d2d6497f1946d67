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

package cache

import (
	"fmt"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Bounds of the options a sync's arguments may ask for.
const (
	MaxParallelism = 256
	MinPartSize    = 1 << 20
	MaxPartSize    = 5 << 30
)

// OptionsFromArgs checks a sync's arguments and turns them into where the bucket is and the engine's
// options: the one translation that a worker (`pqcache sync`, stage and watch, from its parsed
// command line) and a node agent (from the Dataset's arguments with their defaults,
// wire.SyncArgs.WithDefaults) share, so that the two run a Dataset's sync alike. Fields the
// arguments do not carry are left for the caller: what runs where (Log, Progress, OnPlan, Requests,
// SubPrefixes, Ephemeral, Changes, Follow, GenerationAtLeast, Generations.Index) and, in the store
// configuration, credentials and the HTTP client. A dry run keeps no generations.
func OptionsFromArgs(a wire.SyncArgs) (s3store.Config, Options, error) {
	var opts Options
	bucket, prefix, err := wire.ParseS3URL(a.Source)
	if err != nil {
		return s3store.Config{}, opts, err
	}
	if a.Parallel < 1 || a.Parallel > MaxParallelism {
		return s3store.Config{}, opts, fmt.Errorf("--parallel %d: must be between 1 and %d", a.Parallel, MaxParallelism)
	}
	part := int64(a.PartSize)
	if part < MinPartSize || part > MaxPartSize {
		return s3store.Config{}, opts, fmt.Errorf("--part-size %s: must be a size between 1Mi and 5Gi", a.PartSize)
	}
	if !a.Verify.Valid() {
		return s3store.Config{}, opts, fmt.Errorf("--verify %q: must be checksum, sha256 or size", a.Verify)
	}
	if err := checkTable(a, prefix); err != nil {
		return s3store.Config{}, opts, err
	}
	if a.Generations < 0 || a.Generations > generations.DefaultMaxKept {
		return s3store.Config{}, opts, fmt.Errorf("--generations %d: must be between 0 and %d", a.Generations, generations.DefaultMaxKept)
	}
	var maxBytes *int64
	if a.MaxBytes != nil {
		if *a.MaxBytes < 0 {
			return s3store.Config{}, opts, fmt.Errorf("--max-bytes %d: must not be negative", *a.MaxBytes)
		}
		maxBytes = new(int64(*a.MaxBytes))
	}
	opts = Options{
		Dir: a.Dir, Source: SourceID(a.Endpoint, bucket, prefix), Prefix: prefix,
		Include: a.Include, Exclude: a.Exclude, Parallelism: a.Parallel, PartSize: part,
		Verify: a.Verify, Prune: !a.NoDelete, PageCache: a.PageCache, DryRun: a.DryRun, MaxBytes: maxBytes,
		Table: a.Table,
	}
	if a.Generations > 0 && !a.DryRun {
		opts.Generations = &generations.Policy{Keep: a.Generations, MinAge: a.GenerationMinAge, Pinned: a.KeepGenerations}
	}
	cfg := s3store.Config{Bucket: bucket, Region: a.Region, Endpoint: a.Endpoint, PathStyle: a.PathStyle}
	return cfg, opts, nil
}
