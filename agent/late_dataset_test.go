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
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// agentConfig is the agents' connection to the API server: the test's, with datasetWatchLag applied.
func (cl *cluster) agentConfig() *rest.Config {
	cfg := rest.CopyConfig(cl.cfg)
	if lag := cl.datasetWatchLag; lag > 0 {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &laggingWatches{next: rt, lag: lag} }
	}
	return cfg
}

// laggingWatches delays every read of a watch of Datasets by lag: the agent's Datasets then reach
// its cache after their DatasetReplicas, as they can on a loaded API server (two watches, no order).
type laggingWatches struct {
	next http.RoundTripper
	lag  time.Duration
}

func (l *laggingWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := l.next.RoundTrip(r)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/datasets") || r.URL.Query().Get("watch") != "true" {
		return res, err
	}
	res.Body = &laggingBody{ReadCloser: res.Body, lag: l.lag}
	return res, nil
}

type laggingBody struct {
	io.ReadCloser
	lag time.Duration
}

func (b *laggingBody) Read(p []byte) (int, error) {
	time.Sleep(b.lag)
	return b.ReadCloser.Read(p)
}

// TestACopyStartsWhenItsDatasetReachesTheAgentLate: a Dataset created while the agent's watch of
// Datasets lags by 2 s reaches the agent after its DatasetReplica does. The agent's first reconcile
// finds no Dataset; the Dataset's arrival must start the copy (before, nothing did: the copy waited
// for ever: a run of the agent's tests on a loaded machine once saw TestASlowBucketGivesBackItsSlots's
// calm Dataset never copied).
func TestACopyStartsWhenItsDatasetReachesTheAgentLate(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startS3()
	cl.put("day=0/part-0.bin", 1<<16, 1)
	cl.datasetWatchLag = 2 * time.Second
	cl.addNode("node-a")
	first := cl.dataset("first", 1)
	cl.waitFor("the first Dataset's copy is published", time.Minute, func() (bool, string) { return cl.copiesAt(first, 1, "node-a") })
	late := cl.dataset("late", 1, func(ds *datav1alpha1.Dataset) { ds.Spec.Sync.Parallelism = 2 })
	cl.waitFor("the late Dataset's copy is published", 30*time.Second, func() (bool, string) { return cl.copiesAt(late, 1, "node-a") })
}
