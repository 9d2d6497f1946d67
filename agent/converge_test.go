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
	"io"
	"log/slog"
	"testing"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// A seed asked to sync a Dataset spec its cache has not seen yet waits for it, instead of syncing the
// old source and answering the request: found on the local cluster, where a changed prefix reached
// the agent's DatasetReplica before its Dataset, and the copy kept the old data as "synced".
func TestSeedWaitsForTheSpecItWasAskedToSync(t *testing.T) {
	ds := &datav1alpha1.Dataset{}
	ds.Spec.Source.S3.Bucket, ds.Spec.Source.S3.Prefix = "lake", "v1/"
	asked := ds.Spec.DeepCopy()
	asked.Source.S3.Prefix = "v2/"
	rep := &datav1alpha1.DatasetReplica{Spec: datav1alpha1.DatasetReplicaSpec{Role: datav1alpha1.RoleSeed, NodeName: "n",
		SyncToken: "SourceChanged.x.1", SourceHash: syncspec.SourceHash(asked)}}
	a := &Agent{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	res := a.converge(context.Background(), ds, rep, t.TempDir())
	if res.RequeueAfter != sourceLagRetry {
		t.Fatalf("converge = %+v, want a look again in %s", res, sourceLagRetry)
	}
	if rep.Status.ObservedSyncToken != "" || rep.Status.LastSync != nil {
		t.Fatalf("the request was answered with the old source: %+v", rep.Status)
	}
}
