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

package readers

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what the endpoint answers, per namespace: the requests by operation and status,
// the bytes sent, how long requests take, and the sessions held. The namespace label is only ever a
// namespace whose key verified (refusals before that count under ""), so a sender cannot make series
// without end; operations and statuses are closed sets.
type Metrics struct {
	requests  *prometheus.CounterVec
	sentBytes *prometheus.CounterVec
	duration  *prometheus.HistogramVec
}

// NewMetrics makes the endpoint's metrics and registers them with reg, with a gauge of the sessions
// that sessions holds per namespace.
func NewMetrics(reg prometheus.Registerer, sessions *Sessions) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pqcache_readers_requests_total",
			Help: "Requests the node's S3 endpoint for readers answered, by the reader's namespace (\"\" before its key verified), S3 operation and HTTP status.",
		}, []string{"namespace", "operation", "status"}),
		sentBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pqcache_readers_sent_bytes_total",
			Help: "Bytes of answers (objects, listings, errors) the node's S3 endpoint for readers sent, by the reader's namespace.",
		}, []string{"namespace"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pqcache_readers_request_duration_seconds",
			Help:    "Time from a request's arrival at the node's S3 endpoint for readers to its answer's last byte, by S3 operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5 ms to 131 s
		}, []string{"operation"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.sentBytes, m.duration, sessionsCollector{sessions}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts one answered request.
func (m *Metrics) observe(namespace, operation string, status int, sent int64, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(namespace, operation, strconv.Itoa(status)).Inc()
	m.sentBytes.WithLabelValues(namespace).Add(float64(sent))
	m.duration.WithLabelValues(operation).Observe(took.Seconds())
}

// operation names the S3 operation a request asks for, from its method and path alone (it may be
// refused before anything else is read).
func operation(r *http.Request) string {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	head := r.Method == http.MethodHead
	switch {
	case r.Method != http.MethodGet && !head:
		return "Other"
	case bucket == "":
		return "ListBuckets"
	case key != "" && head:
		return "HeadObject"
	case key != "":
		return "GetObject"
	case head:
		return "HeadBucket"
	case r.URL.Query().Has("location"):
		return "GetBucketLocation"
	default:
		return "ListObjects"
	}
}

// sessionsCollector reports the sessions held per namespace when scraped.
type sessionsCollector struct{ sessions *Sessions }

var sessionsDesc = prometheus.NewDesc("pqcache_readers_sessions",
	"Readers' sessions that hold generations on this node, by namespace: each holds its generations' disk until it ends.",
	[]string{"namespace"}, nil)

func (c sessionsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsDesc }

func (c sessionsCollector) Collect(ch chan<- prometheus.Metric) {
	for ns, n := range c.sessions.PerNamespace() {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), ns)
	}
}

// recorder notes an answer's status and size. It passes io.ReaderFrom on, so that a file sent over
// plain HTTP still goes by sendfile.
type recorder struct {
	http.ResponseWriter
	status int
	sent   int64
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.sent += int64(n)
	return n, err
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := io.Copy(r.ResponseWriter, src)
	r.sent += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
