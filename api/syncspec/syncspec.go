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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// The defaults of spec.sync, as the API's markers give them (TestTheCRDDefaultsAreTheSyncDefaults
// holds the two together), for Datasets that never went through the API server's defaulting (built
// by hand, or stored before a field existed). Every reader of these fields goes through the functions
// below, so that no package restates a default.
const (
	// DefaultPrune: a file whose object is gone from the bucket is deleted from the cache.
	DefaultPrune = true
	// DefaultTimeout bounds one sync Job (its activeDeadlineSeconds).
	DefaultTimeout = 6 * time.Hour
)

// Prune is spec.sync.prune, or its default.
func Prune(spec *datav1alpha1.DatasetSpec) bool { return ptr.Deref(spec.Sync.Prune, DefaultPrune) }

// KeepGenerations is spec.sync.keepGenerations, or its default: the whole generations kept as trees
// readers can hold.
func KeepGenerations(spec *datav1alpha1.DatasetSpec) int {
	return int(ptr.Deref(spec.Sync.KeepGenerations, wire.DefaultGenerations))
}

// Timeout is spec.sync.timeout, or its default.
func Timeout(spec *datav1alpha1.DatasetSpec) time.Duration {
	if t := spec.Sync.Timeout; t != nil {
		return t.Duration
	}
	return DefaultTimeout
}

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
			Parallel: int(max(sy.Parallelism, 1)), NoDelete: !Prune(&ds.Spec),
		},
		GenerationOptions: wire.GenerationOptions{Generations: KeepGenerations(&ds.Spec)},
	}
	if sy.PartSize != nil {
		// In bytes, rounded up as a quantity's Value is: a quantity may be written as a fraction.
		a.PartSize = wire.Size(sy.PartSize.Value())
	}
	if r := ds.Spec.Replicas; r != nil && r.MaxBytes != nil {
		a.MaxBytes = new(wire.Size(r.MaxBytes.Value()))
	}
	if t := ds.Spec.Source.Table; t != nil && t.Format == datav1alpha1.TableDelta {
		a.Table = wire.TableDelta
	}
	switch sy.Verify {
	case datav1alpha1.VerifySize:
		a.Verify = wire.VerifySize
	case datav1alpha1.VerifySHA256:
		a.Verify = wire.VerifySHA256
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

// SourceHash identifies the settings that decide what a Dataset's cache holds; a change means the
// published data no longer matches the spec. Schedule and tuning changes do not count. The controller
// records it with each sync, and a node agent checks that the Dataset it reads is the one a sync
// request was made for (DatasetReplicaSpec.SourceHash).
func SourceHash(spec *datav1alpha1.DatasetSpec) string {
	s3 := spec.Source.S3
	table := ""
	if spec.Source.Table != nil {
		table = string(spec.Source.Table.Format)
	}
	data, _ := json.Marshal(struct {
		Bucket, Prefix, Region, Endpoint string
		PathStyle                        bool
		Include, Exclude                 []string
		Prune                            bool
		// Table is left out when empty: a prefix Dataset's hash stays what earlier releases recorded.
		Table string `json:",omitempty"`
	}{s3.Bucket, s3.Prefix, s3.Region, s3.Endpoint, s3.ForcePathStyle, spec.Include, spec.Exclude, Prune(spec), table})
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:8])
}
