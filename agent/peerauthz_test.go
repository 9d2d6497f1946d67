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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/peer"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// TestPeerAuthorizer: a peer serves a Dataset only to the nodes its plan names (a DatasetReplica of
// that Dataset on the caller's node), read from a real API server.
func TestPeerAuthorizer(t *testing.T) {
	cl := startCluster(t, nil)
	for _, r := range []struct{ name, dataset, node string }{{"sales-a", "sales", "node-a"}, {"other-b", "other", "node-b"}} {
		rep := &datav1alpha1.DatasetReplica{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: r.name,
			Labels: map[string]string{datav1alpha1.LabelReplicaDataset: r.dataset, datav1alpha1.LabelReplicaNode: r.node}},
			Spec: datav1alpha1.DatasetReplicaSpec{DatasetName: r.dataset, NodeName: r.node, Role: datav1alpha1.RoleFollower}}
		if err := cl.c.Create(cl.ctx, rep); err != nil {
			t.Fatal(err)
		}
	}
	a := &agent.PeerAuthorizer{Reader: cl.c}
	for _, c := range []struct {
		node, bucket, want string
	}{
		{"node-a", agent.Bucket("default", "sales"), ""},
		{"node-a", agent.Bucket("default", "sales"), ""}, // remembered
		{"node-b", agent.Bucket("default", "sales"), "keeps no copy"},
		{"node-a", agent.Bucket("default", "other"), "keeps no copy"},
		{"node-a", agent.Bucket("elsewhere", "sales"), "keeps no copy"},
		{"", agent.Bucket("default", "sales"), "names no node"},
		{"node-a", "nodot", "no Dataset"},
	} {
		err := a.Authorize(cl.ctx, peer.Caller{Node: c.node}, c.bucket)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s reading %s: %v, want %q", c.node, c.bucket, err, c.want)
		}
	}
}
