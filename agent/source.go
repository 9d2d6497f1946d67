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

package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
)

// errServiceAccountCredentials: one agent serves every Dataset on its node, so it cannot take on a
// Dataset's service account identity.
var errServiceAccountCredentials = errors.New("credentials.serviceAccountName is not supported with spec.replicas yet: the node agent syncs every Dataset on its node in one process; use credentials.secretRef")

// bucketHTTP sends every sync's requests to the buckets: one connection pool for the agent's
// lifetime, not one per sync; with timeouts, and no redirect to another host.
var bucketHTTP = s3store.NewHTTPClient(s3store.DefaultClientTimeouts)

// bucketStore is the Dataset's bucket at cfg (from SyncOptions), with the credentials of its Secret
// (read for each sync, never logged or kept), sending its requests through hc (nil: bucketHTTP).
func bucketStore(ctx context.Context, reader client.Reader, ds *datav1alpha1.Dataset, cfg s3store.Config, hc aws.HTTPClient) (*s3store.Store, error) {
	cfg.HTTPClient = bucketHTTP
	if hc != nil {
		cfg.HTTPClient = hc
	}
	if c := ds.Spec.Source.S3.Credentials; c != nil {
		if c.ServiceAccountName != "" {
			return nil, errServiceAccountCredentials
		}
		if c.SecretRef != nil {
			var sec corev1.Secret
			if err := reader.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: c.SecretRef.Name}, &sec); err != nil {
				return nil, fmt.Errorf("reading the credentials Secret %s: %w", c.SecretRef.Name, err)
			}
			cfg.Credentials = &s3store.Credentials{AccessKeyID: string(sec.Data[wire.EnvAccessKeyID]),
				SecretAccessKey: string(sec.Data[wire.EnvSecretAccessKey]), SessionToken: string(sec.Data[wire.EnvSessionToken])}
		}
	}
	return s3store.New(ctx, cfg)
}

// SyncOptions are where ds's bucket is and the engine's options for ds's copy in dir: the Dataset's
// arguments as its sync Jobs get them (syncspec.Args, with the worker's defaults), turned into
// options as a worker turns its command line (cache.OptionsFromArgs), and then what is this node's.
// A node copy always publishes generations, indexed: readers on the node mount them (CSI) and
// followers copy them from this agent. The caller still sets the parallelism the node's budget grants
// (at most Parallelism), the logger, the request counters and, for a follower, Follow.
func SyncOptions(ds *datav1alpha1.Dataset, dir string) (s3store.Config, cache.Options, error) {
	args := syncspec.Args(ds).WithDefaults()
	args.Dir = dir
	args.Generations = max(args.Generations, 1)
	cfg, opts, err := cache.OptionsFromArgs(args)
	if err != nil {
		return cfg, opts, fmt.Errorf("the options of %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	opts.Generations.Index = true
	return cfg, opts, nil
}
