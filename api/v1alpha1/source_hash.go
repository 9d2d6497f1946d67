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

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/utils/ptr"
)

// SourceHash identifies the settings that decide what a Dataset's cache holds; a change means the
// published data no longer matches the spec. Schedule and tuning changes do not count. The controller
// records it with each sync, and a node agent checks that the Dataset it reads is the one a sync
// request was made for (DatasetReplicaSpec.SourceHash).
func SourceHash(spec *DatasetSpec) string {
	s3 := spec.Source.S3
	data, _ := json.Marshal(struct {
		Bucket, Prefix, Region, Endpoint string
		PathStyle                        bool
		Include, Exclude                 []string
		Prune                            bool
	}{s3.Bucket, s3.Prefix, s3.Region, s3.Endpoint, s3.ForcePathStyle, spec.Include, spec.Exclude, ptr.Deref(spec.Sync.Prune, true)})
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:8])
}
