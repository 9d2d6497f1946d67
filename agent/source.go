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
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/s3store"
)

// The keys of a Dataset's credentials Secret, as for its sync Jobs (docs/datasets.md).
const (
	secretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	secretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	secretKeySessionToken    = "AWS_SESSION_TOKEN"
)

// generationMinAge keeps a generation that stopped being current for a while, for readers that
// resolved it without holding it, as the sync Jobs do.
const generationMinAge = 5 * time.Minute

// errServiceAccountCredentials: one agent serves every Dataset on its node, so it cannot take on a
// Dataset's service account identity.
var errServiceAccountCredentials = errors.New("credentials.serviceAccountName is not supported with spec.replicas yet: the node agent syncs every Dataset on its node in one process; use credentials.secretRef")

// bucketHTTP sends every sync's requests to the buckets: one connection pool for the agent's
// lifetime, not one per sync.
var bucketHTTP = awshttp.NewBuildableClient()

// bucketStore is the Dataset's bucket, with the credentials of its Secret (read for each sync,
// never logged or kept).
func bucketStore(ctx context.Context, reader client.Reader, ds *datav1alpha1.Dataset) (*s3store.Store, error) {
	s3 := ds.Spec.Source.S3
	cfg := s3store.Config{Bucket: s3.Bucket, Region: s3.Region, Endpoint: s3.Endpoint, PathStyle: s3.ForcePathStyle, HTTPClient: bucketHTTP}
	if c := s3.Credentials; c != nil {
		if c.ServiceAccountName != "" {
			return nil, errServiceAccountCredentials
		}
		if c.SecretRef != nil {
			var sec corev1.Secret
			if err := reader.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: c.SecretRef.Name}, &sec); err != nil {
				return nil, fmt.Errorf("reading the credentials Secret %s: %w", c.SecretRef.Name, err)
			}
			cfg.Credentials = &s3store.Credentials{AccessKeyID: string(sec.Data[secretKeyAccessKeyID]),
				SecretAccessKey: string(sec.Data[secretKeySecretAccessKey]), SessionToken: string(sec.Data[secretKeySessionToken])}
		}
	}
	return s3store.New(ctx, cfg)
}

// syncOptions are the engine's options for ds's copy in dir, with parallelism granted by the node's
// budget.
func syncOptions(ds *datav1alpha1.Dataset, dir string, parallelism int) cache.Options {
	sy := ds.Spec.Sync
	opts := cache.Options{
		Dir: dir, Source: cache.SourceID(ds.Spec.Source.S3.Endpoint, ds.Spec.Source.S3.Bucket, ds.Spec.Source.S3.Prefix), Prefix: ds.Spec.Source.S3.Prefix, Include: ds.Spec.Include, Exclude: ds.Spec.Exclude,
		Parallelism: parallelism, Prune: ptr.Deref(sy.Prune, true),
		Generations: &generations.Policy{Keep: max(int(ptr.Deref(sy.KeepGenerations, 2)), 1), MinAge: generationMinAge, Index: true},
	}
	if sy.PartSize != nil {
		opts.PartSize = sy.PartSize.Value()
	}
	switch sy.Verify {
	case datav1alpha1.VerifySize:
		opts.Verify = cache.VerifySize
	case datav1alpha1.VerifySHA256:
		opts.Verify = cache.VerifySHA256
	}
	return opts
}
