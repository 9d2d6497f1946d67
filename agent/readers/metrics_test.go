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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsCountAnswersPerNamespaceOperationAndStatus(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, f.sessions)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Metrics = m

	a := f.client("team-a", "")
	body, err := get(t, a, "sales/day=1/a.parquet", "bytes=0-4")
	if err != nil || body != "sales" {
		t.Fatalf("ranged GET: %q, %v", body, err)
	}
	if _, err := a.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("sales/no-such.parquet")}); err == nil {
		t.Fatal("HEAD of a missing key succeeded")
	}
	if _, err := a.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String("sales/")}); err != nil {
		t.Fatal(err)
	}
	stranger := f.clientWith("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "")
	if _, err := get(t, stranger, "sales/day=1/a.parquet", ""); err == nil {
		t.Fatal("a key pqcache did not issue read an object")
	}
	put, err := http.NewRequestWithContext(t.Context(), http.MethodPut, f.url+"/lake/sales/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	for _, c := range []struct {
		namespace, operation, status string
		want                         float64
	}{
		{"team-a", "GetObject", "206", 1},
		{"team-a", "HeadObject", "404", 1},
		{"team-a", "ListObjects", "200", 1},
		{"", "GetObject", "403", 1},
		{"", "Other", "405", 1}, // the PUT
		{"team-b", "GetObject", "206", 0},
	} {
		got := testutil.ToFloat64(m.requests.WithLabelValues(c.namespace, c.operation, c.status))
		if got != c.want {
			t.Errorf("requests{namespace=%q, operation=%q, status=%q} = %v, want %v", c.namespace, c.operation, c.status, got, c.want)
		}
	}
	if sent := testutil.ToFloat64(m.sentBytes.WithLabelValues("team-a")); sent < 5 {
		t.Errorf("team-a was sent %v bytes, at least the 5 of its ranged GET expected", sent)
	}
	if n := testutil.ToFloat64(sessionsCollector{f.sessions}); n != 1 {
		t.Errorf("sessions gauge %v, want team-a's one", n)
	}
	if n := testutil.CollectAndCount(m.duration); n != 4 {
		t.Errorf("duration series %d, want one per operation seen (4)", n)
	}
}

func TestOperationNamesEveryRequestShape(t *testing.T) {
	for target, want := range map[string]string{
		"GET /":                  "ListBuckets",
		"GET /lake":              "ListObjects",
		"GET /lake/?list-type=2": "ListObjects",
		"GET /lake?location":     "GetBucketLocation",
		"HEAD /lake":             "HeadBucket",
		"GET /lake/a/b.parquet":  "GetObject",
		"HEAD /lake/a.parquet":   "HeadObject",
		"PUT /lake/a.parquet":    "Other",
	} {
		method, path, _ := strings.Cut(target, " ")
		if got := operation(httptest.NewRequestWithContext(t.Context(), method, path, nil)); got != want {
			t.Errorf("%s: %s, want %s", target, got, want)
		}
	}
}
