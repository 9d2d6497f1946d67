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

package dataset

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Dataset metrics, served on the manager's metrics endpoint. Labels are namespace and dataset only,
// so their number follows the number of Datasets, not of syncs or files.
var (
	datasetLabels = []string{"namespace", "dataset"}

	syncDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pqcache_sync_duration_seconds",
		Help:    "Wall time of finished syncs, successful or not.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1 s to 9 h
	}, datasetLabels)
	syncBytesCopied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pqcache_sync_bytes_copied_total",
		Help: "Bytes downloaded and published by syncs.",
	}, datasetLabels)
	syncFilesCopied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pqcache_sync_files_copied_total",
		Help: "Files downloaded and published by syncs.",
	}, datasetLabels)
	syncFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pqcache_sync_failures_total",
		Help: "Syncs that failed.",
	}, datasetLabels)
	lastSuccessfulSync = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pqcache_dataset_last_successful_sync_timestamp_seconds",
		Help: "Unix time of the last successful sync; alert on time() minus this.",
	}, datasetLabels)
	outOfSync = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pqcache_dataset_out_of_sync",
		Help: "1 while the Dataset is not Ready (its volume does not hold the data of its current source), else 0.",
	}, datasetLabels)
	eventLagSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pqcache_dataset_event_lag_seconds",
		Help:    "Freshness of event-driven refreshes: from the newest event of a batch to its publication on the volume.",
		Buckets: []float64{0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300},
	}, datasetLabels)
	changesFoundByListing = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pqcache_dataset_changes_found_by_listing_total",
		Help: "Changes that listing syncs found and no event notification announced: notifications are being lost.",
	}, datasetLabels)
	nextListing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pqcache_dataset_next_sync_timestamp_seconds",
		Help: "Unix time the schedule's next listing sync is due (status.nextSyncTime), absent while a listing sync runs; alert on time() minus this: a listing overdue.",
	}, datasetLabels)
	copiesWithoutAgent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pqcache_dataset_copies_without_agent",
		Help: "Copies of a Dataset with spec.replicas whose node runs no Ready node agent (status reason NoAgent): nobody keeps them fresh, and pods there cannot mount them.",
	}, datasetLabels)
	cacheBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pqcache_dataset_cache_bytes",
		Help: "Bytes published on the Dataset's volume, from its manifest.",
	}, datasetLabels)
)

func init() {
	metrics.Registry.MustRegister(eventLagSeconds, syncDurationSeconds, syncBytesCopied, syncFilesCopied, syncFailures, lastSuccessfulSync, outOfSync, cacheBytes, changesFoundByListing, nextListing, copiesWithoutAgent)
}

// observeSync records one finished sync of ds, ls as recorded; it is called once per Job.
func observeSync(ds *datav1alpha1.Dataset, ls *datav1alpha1.SyncResult, ok bool) {
	l := prometheus.Labels{"namespace": ds.Namespace, "dataset": ds.Name}
	syncDurationSeconds.With(l).Observe(float64(ls.DurationMillis) / 1000)
	syncBytesCopied.With(l).Add(float64(ls.BytesCopied))
	syncFilesCopied.With(l).Add(float64(ls.FilesCopied))
	if !ok {
		syncFailures.With(l).Add(1)
	}
}

// observeEventLag records the lag of one applied batch of events.
func observeEventLag(ds *datav1alpha1.Dataset, lag time.Duration) {
	eventLagSeconds.With(prometheus.Labels{"namespace": ds.Namespace, "dataset": ds.Name}).Observe(lag.Seconds())
}

// observeFoundByListing counts changes a listing sync found that no notification announced.
func observeFoundByListing(ds *datav1alpha1.Dataset, n int64) {
	changesFoundByListing.With(prometheus.Labels{"namespace": ds.Namespace, "dataset": ds.Name}).Add(float64(n))
}

// observeDataset sets the gauges from the Dataset's status. listing says a listing sync is running:
// the listing that was due is then under way, so the next-listing series is withdrawn until it ends
// (it would otherwise read as overdue for as long as a big listing takes).
func observeDataset(ds *datav1alpha1.Dataset, ready, listing bool) {
	l := prometheus.Labels{"namespace": ds.Namespace, "dataset": ds.Name}
	// The counters an alert takes increase() of exist from the first reconcile, at 0: a series born at
	// its first increment hides that increment from increase().
	syncFailures.With(l)
	changesFoundByListing.With(l)
	if t := ds.Status.LastSuccessfulSyncTime; t != nil {
		lastSuccessfulSync.With(l).Set(float64(t.Unix()))
	}
	v := 1.0
	if ready {
		v = 0
	}
	outOfSync.With(l).Set(v)
	if m := ds.Status.Manifest; m != nil {
		cacheBytes.With(l).Set(float64(m.Bytes))
	}
	observeCopies(ds, l)
	if t := ds.Status.NextSyncTime; t != nil && !listing {
		nextListing.With(l).Set(float64(t.Unix()))
	} else {
		nextListing.Delete(l)
	}
}

// observeCopies sets the count of copies without an agent, 0 included, for a Dataset with copies;
// a Dataset that keeps none (or no longer does) has no such series.
func observeCopies(ds *datav1alpha1.Dataset, l prometheus.Labels) {
	if ds.Spec.Replicas == nil || ds.Status.Replicas == nil {
		copiesWithoutAgent.Delete(l)
		return
	}
	n := 0
	for _, c := range ds.Status.Replicas.Nodes {
		if c.Reason == datav1alpha1.ReasonNoAgent {
			n++
		}
	}
	copiesWithoutAgent.With(l).Set(float64(n))
}

// forgetDataset drops a deleted Dataset's series.
func forgetDataset(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "dataset": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{eventLagSeconds, syncDurationSeconds, syncBytesCopied, syncFilesCopied, syncFailures, lastSuccessfulSync, outOfSync, cacheBytes, changesFoundByListing, nextListing, copiesWithoutAgent} {
		v.DeletePartialMatch(l)
	}
}
