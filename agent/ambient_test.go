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

package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestNoBorrowedIdentity: the agent's own identity (here its environment's credentials, the test
// server's, standing for a node role or IRSA) never reads the bucket of a Dataset that names no
// Secret in a namespace the chart does not allow: the copy reports AmbientCredentialsNotAllowed, on
// its DatasetReplica and in the Dataset's status, with the setting that would allow it. In an
// allowed namespace the same Dataset syncs with it.
func TestNoBorrowedIdentity(t *testing.T) {
	t.Setenv(wire.EnvAccessKeyID, s3test.AccessKey)
	t.Setenv(wire.EnvSecretAccessKey, s3test.SecretKey)
	for _, allowed := range [][]string{nil, {"default"}} {
		t.Run(fmt.Sprintf("allowed=%v", allowed), func(t *testing.T) {
			cl := startCluster(t, nil)
			cl.startS3()
			cl.put("day=0/part-0.bin", 1<<12, 1)
			cl.ambient = allowed
			cl.addNode("node-a")
			ds := cl.dataset("ambient", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Source.S3.Credentials = nil })
			if allowed != nil {
				cl.waitFor("the copy is published with the agent's identity", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a") })
				return
			}
			cl.waitFor("the copy reports AmbientCredentialsNotAllowed", time.Minute, func() (bool, string) {
				_, st := readyCondition(cl, ds)
				if st == nil || len(st.Nodes) == 0 {
					return false, fmt.Sprintf("%+v", st)
				}
				return st.Nodes[0].Reason == wire.ReasonAmbientCredentialsNotAllowed, fmt.Sprintf("%+v", st.Nodes[0])
			})
			var reps datav1alpha1.DatasetReplicaList
			if err := cl.c.List(cl.ctx, &reps, client.InNamespace(ds.Namespace)); err != nil {
				t.Fatal(err)
			}
			for _, r := range reps.Items {
				ls := r.Status.LastSync
				if r.Spec.DatasetName != ds.Name || ls == nil {
					continue
				}
				if ls.Reason != wire.ReasonAmbientCredentialsNotAllowed || !strings.Contains(ls.Message, "ambientCredentials.namespaces") {
					t.Errorf("DatasetReplica %s: lastSync %s: %s, want the reason and the setting that would allow it", r.Name, ls.Reason, ls.Message)
				}
			}
		})
	}
}
