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

// Package syncspec turns a Dataset's spec into the sync's arguments (wire.SyncArgs), once, for both
// places that run the sync engine: the controllers render them as a sync Job's command line, and the
// node agent runs the engine with them in-process. Both then turn the arguments into the engine's
// options with cache.OptionsFromArgs. A spec.sync field added here reaches both; one path that drops
// or overrides a field fails internal/cli's TestJobAndAgentSyncADatasetAlike, which also fails when
// a spec.sync field has no case of its own.
//
// It sits beside the API rather than in it or in api/wire: api/wire imports nothing of ours, and the
// API types package holds types and their markers, not translation.
package syncspec

import (
	"strconv"

	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// DefaultPrune is spec.sync.prune when the Dataset does not say (as the API's default does): a file
// whose object is gone from the bucket is deleted from the cache.
const DefaultPrune = true

// Args are the sync arguments ds's spec gives: the source, which objects, how to reach them,
// spec.sync, and spec.replicas.maxBytes (a Dataset with spec.replicas has no sync Job, but the
// arguments stay one path). A field left zero takes the worker's default (wire.DefaultSyncOptions,
// wire.DefaultGenerationOptions), on a command line and through SyncArgs.WithDefaults alike. Dir,
// and what a caller reports to or keeps for its readers (progress, log level, report file, pinned
// generations, a change set), are the caller's.
func Args(ds *datav1alpha1.Dataset) wire.SyncArgs {
	sy := ds.Spec.Sync
	a := wire.SyncArgs{
		Source: SourceURL(ds),
		SyncOptions: wire.SyncOptions{
			S3Access: S3Access(ds), Include: ds.Spec.Include, Exclude: ds.Spec.Exclude,
			Parallel: int(max(sy.Parallelism, 1)), NoDelete: !ptr.Deref(sy.Prune, DefaultPrune),
		},
		GenerationOptions: wire.GenerationOptions{Generations: int(ptr.Deref(sy.KeepGenerations, wire.DefaultGenerations))},
	}
	if sy.PartSize != nil {
		a.PartSize = sy.PartSize.String()
	}
	if r := ds.Spec.Replicas; r != nil && r.MaxBytes != nil {
		// In bytes: a quantity's own form may be a fraction ("1.5Gi" is fine, "1500m" is not a size).
		a.MaxBytes = strconv.FormatInt(r.MaxBytes.Value(), 10)
	}
	switch sy.Verify {
	case datav1alpha1.VerifySize:
		a.Verify = "size"
	case datav1alpha1.VerifySHA256:
		a.Verify = "sha256"
	}
	return a
}

// SourceURL is the Dataset's source as the workers name it: s3://BUCKET/PREFIX.
func SourceURL(ds *datav1alpha1.Dataset) string {
	return "s3://" + ds.Spec.Source.S3.Bucket + "/" + ds.Spec.Source.S3.Prefix
}

// S3Access is how a sync reaches the Dataset's bucket, beside its credentials.
func S3Access(ds *datav1alpha1.Dataset) wire.S3Access {
	s3 := ds.Spec.Source.S3
	return wire.S3Access{Endpoint: s3.Endpoint, Region: s3.Region, PathStyle: s3.ForcePathStyle}
}

// NamesCredentials reports whether ds names credentials of its own: a Secret, or a service account
// (IRSA, Pod Identity). A Dataset that names neither would be read with the reader's own identity
// (ambient credentials), which only the namespaces that wire.AmbientAllowed admits may use.
func NamesCredentials(ds *datav1alpha1.Dataset) bool {
	c := ds.Spec.Source.S3.Credentials
	return c != nil && (c.SecretRef != nil || c.ServiceAccountName != "")
}
