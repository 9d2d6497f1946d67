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
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// replicas returns ds's DatasetReplicas by node.
func (cl *cluster) replicas(ds *datav1alpha1.Dataset) map[string]datav1alpha1.DatasetReplica {
	var reps datav1alpha1.DatasetReplicaList
	if err := cl.c.List(cl.ctx, &reps, client.InNamespace(ds.Namespace)); err != nil {
		cl.t.Fatal(err)
	}
	out := map[string]datav1alpha1.DatasetReplica{}
	for _, r := range reps.Items {
		if r.Spec.DatasetName == ds.Name {
			out[r.Spec.NodeName] = r
		}
	}
	return out
}

// forgeManifests makes a peer serve every generation's manifest with one size changed, as a node
// that lies about what the seed published would.
func forgeManifests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/.pqcache/objects") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := bytes.Replace(rec.Body.Bytes(), []byte(`"size":`), []byte(`"size":1`), 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestAFollowerRefusesAForgingPeer: the seed publishes its generation's manifest digest in its own
// DatasetReplica, and the controller hands it to the follower. When the peer serves a manifest that
// differs, the follower refuses it with PeerManifestMismatch on its DatasetReplica and keeps its last
// good generation; once the peer serves the seed's manifest again, the follower catches up.
func TestAFollowerRefusesAForgingPeer(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	for i := range 3 {
		cl.put(fmt.Sprintf("day=%d/part-0.bin", i), 1<<16, byte(i))
	}
	cl.addNode("node-a")
	cl.addNode("node-b")
	ds := cl.dataset("sales", 1)
	cl.waitFor("both nodes hold generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-b") })
	_, st := readyCondition(cl, ds)
	seed, follower := st.Seed, "node-a"
	if seed == "node-a" {
		follower = "node-b"
	}
	reps := cl.replicas(ds)
	if d := reps[seed].Status.ManifestDigest; !strings.HasPrefix(d, "sha256:") || reps[follower].Spec.ManifestDigest != d {
		t.Fatalf("the seed publishes digest %q, the follower is given %q", d, reps[follower].Spec.ManifestDigest)
	}

	forge := forgeManifests
	cl.peerForge.Store(&forge)
	cl.put("day=3/part-0.bin", 1<<16, 30)
	requestSync(cl, ds, "one")
	cl.waitFor("the seed holds generation 2", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 2, seed) })
	cl.waitFor("the follower refuses the forging peer", time.Minute, func() (bool, string) {
		r := cl.replicas(ds)[follower]
		c := meta.FindStatusCondition(r.Status.Conditions, datav1alpha1.ConditionReady)
		ls := r.Status.LastSync
		return ls != nil && ls.Reason == datav1alpha1.ReasonPeerManifestMismatch && c != nil && c.Status == metav1.ConditionFalse &&
			c.Reason == datav1alpha1.ReasonPeerManifestMismatch, fmt.Sprintf("lastSync %+v, ready %+v", ls, c)
	})
	if ok, msg := cl.copiesAt(ds, 1, follower); !ok {
		t.Fatalf("the follower left its last good generation: %s", msg)
	}

	cl.peerForge.Store(nil)
	cl.waitFor("the follower holds generation 2 from an honest peer", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 2, follower) })
}
