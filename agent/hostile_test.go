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
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/hostiles3"
	"github.com/pqcache/pqcache/test/testfiles"
)

// replicaReason is the reason the DatasetReplica of ds gives in its lastSync, and its Ready
// condition's.
func replicaReason(cl *cluster, ds *datav1alpha1.Dataset) (string, string) {
	var reps datav1alpha1.DatasetReplicaList
	if err := cl.c.List(cl.ctx, &reps, client.InNamespace(ds.Namespace)); err != nil {
		return "", err.Error()
	}
	for _, r := range reps.Items {
		if r.Spec.DatasetName != ds.Name || r.Status.LastSync == nil {
			continue
		}
		ready := ""
		for _, c := range r.Status.Conditions {
			if c.Type == datav1alpha1.ConditionReady {
				ready = c.Reason
			}
		}
		return r.Status.LastSync.Reason, fmt.Sprintf("lastSync %s %s: %s; Ready reason %s", r.Status.LastSync.Result,
			r.Status.LastSync.Reason, r.Status.LastSync.Message, ready)
	}
	return "", "no DatasetReplica with a lastSync yet"
}

// TestAHostileSourceMarksOnlyItsCopy: one agent keeps two Datasets from the hostile endpoint
// (test/hostiles3). One bucket behaves; the other misbehaves in each cheap way in turn, as a
// Dataset of its own. Each bad Dataset's DatasetReplica reports the behaviour's reason, and the good
// Dataset's copy takes a change to its source, a new generation, every time.
func TestAHostileSourceMarksOnlyItsCopy(t *testing.T) {
	srv, err := hostiles3.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.HugeBytes = 20 << 20
	cl := startCluster(t, nil)
	// The agent's client to the buckets, with a short wait for headers: a store that never answers
	// fails in a second, not in DefaultClientTimeouts' thirty.
	cl.bucketHTTP = s3store.NewHTTPClient(s3store.ClientTimeouts{Dial: 2 * time.Second, TLSHandshake: 2 * time.Second, ResponseHeader: time.Second})
	cl.addNode("node-a")
	at := func(bucket string) func(*datav1alpha1.Dataset) {
		return func(ds *datav1alpha1.Dataset) {
			ds.Spec.Source.S3.Endpoint, ds.Spec.Source.S3.Bucket = srv.URL(), bucket
		}
	}
	srv.Put("good", "sales/day=0/part-0.bin", testfiles.Random(64<<10, 1))
	good := cl.dataset("good", 1, at("good"))
	cl.waitFor("the good Dataset's copy is published", time.Minute, func() (bool, string) { return cl.copiesAt(good, 1, "node-a") })

	cases := []struct {
		rule   hostiles3.Rule
		reason string
	}{
		{hostiles3.Rule{Behaviour: hostiles3.EndlessBody, Op: hostiles3.OpList}, wire.ReasonSourceMisbehaving},
		{hostiles3.Rule{Behaviour: hostiles3.HugeDocument, Op: hostiles3.OpList}, wire.ReasonSourceMisbehaving},
		{hostiles3.Rule{Behaviour: hostiles3.RepeatToken, Op: hostiles3.OpList}, wire.ReasonSourceMisbehaving},
		{hostiles3.Rule{Behaviour: hostiles3.EndlessPages, Op: hostiles3.OpList}, wire.ReasonSourceMisbehaving},
		{hostiles3.Rule{Behaviour: hostiles3.ShortLength, Op: hostiles3.OpList}, wire.ReasonSourceMisbehaving},
		{hostiles3.Rule{Behaviour: hostiles3.SlowHeaders}, wire.ReasonSyncFailed},
		{hostiles3.Rule{Behaviour: hostiles3.RedirectAway}, wire.ReasonSyncFailed},
		{hostiles3.Rule{Behaviour: hostiles3.Storm503}, wire.ReasonSyncFailed},
		{hostiles3.Rule{Behaviour: hostiles3.OutsidePrefix, Op: hostiles3.OpList}, wire.ReasonHostileKeys},
	}
	for i, tc := range cases {
		bucket := fmt.Sprintf("bad-%d", i)
		srv.Put(bucket, "sales/day=0/part-0.bin", testfiles.Random(64<<10, uint64(10+i)))
		srv.Set(bucket, tc.rule)
		start := time.Now()
		bad := cl.dataset(bucket, 1, at(bucket))
		cl.waitFor(fmt.Sprintf("%s: the bad Dataset's copy reports %s", tc.rule.Behaviour, tc.reason), time.Minute, func() (bool, string) {
			r, msg := replicaReason(cl, bad)
			return r == tc.reason, msg
		})
		_, msg := replicaReason(cl, bad)
		t.Logf("%s: %s after %v", tc.rule.Behaviour, msg, time.Since(start).Round(time.Millisecond))

		srv.Put("good", fmt.Sprintf("sales/day=%d/part-0.bin", i+1), testfiles.Random(64<<10, uint64(100+i)))
		requestSync(cl, good, bucket)
		g := int64(i + 2)
		cl.waitFor(fmt.Sprintf("%s: the good Dataset's copy reaches generation %d", tc.rule.Behaviour, g), time.Minute,
			func() (bool, string) { return cl.copiesAt(good, g, "node-a") })
		if srv.Stats.Away.Load() > 0 {
			t.Fatalf("%s: the agent followed a redirect to another host", tc.rule.Behaviour)
		}
		if err := cl.c.Delete(cl.ctx, bad); err != nil {
			t.Fatal(err)
		}
	}
}
