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
	"fmt"
	"os"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
)

// EnvGuard is the endpoint guard that the manager gave a worker pod in its environment (nil: none).
func EnvGuard() (*s3store.DialGuard, error) {
	split := func(env string) []string {
		if v := os.Getenv(env); v != "" {
			return strings.Split(v, ",")
		}
		return nil
	}
	g, err := s3store.NewDialGuard(split(wire.EnvDeniedCIDRs), split(wire.EnvAllowedCIDRs), wire.EndpointsSetting)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", wire.EnvDeniedCIDRs, wire.EnvAllowedCIDRs, err)
	}
	return g, nil
}

// NewStore is s3store.New for a worker (sync, stage, bench), with the policy its environment gives:
// anonymous requests where the manager refused ambient credentials, and the endpoint guard.
// ambientRefused says the first applies (the sync's reason on a refusal).
func NewStore(ctx context.Context, cfg s3store.Config) (st *s3store.Store, ambientRefused bool, err error) {
	if os.Getenv(wire.EnvNoAmbientCredentials) == "true" && cfg.Credentials == nil {
		cfg.Anonymous, ambientRefused = true, true
	}
	g, err := EnvGuard()
	if err != nil {
		return nil, false, err
	}
	if g != nil && cfg.HTTPClient == nil {
		cfg.HTTPClient = g.Guard(s3store.NewHTTPClient(s3store.DefaultClientTimeouts))
	}
	st, err = s3store.New(ctx, cfg)
	return st, ambientRefused, err
}

// prefixStore is the store of an s3:// URL, read with s's endpoint and the environment's
// credentials, and the URL's prefix as a directory: s3://b/tpch is tpch/..., not tpch-old/..., as
// the engines read it.
func prefixStore(ctx context.Context, url string, s wire.S3Access) (*s3store.Store, string, error) {
	bucket, prefix, err := wire.ParseS3URL(url)
	if err != nil {
		return nil, "", err
	}
	store, _, err := NewStore(ctx, s3store.Config{Bucket: bucket, Region: s.Region, Endpoint: s.Endpoint, PathStyle: s.PathStyle})
	if err != nil {
		return nil, "", err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return store, prefix, nil
}
