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

package duckdb_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/enginetest"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestReadsFromS3WithAPrivateCA: an HTTPS endpoint whose certificate a private CA signed (as the
// node's S3 endpoint for readers is), trusted through AWS_CA_BUNDLE; without the bundle, the
// certificate is checked all the same and the query fails, saying so.
func TestReadsFromS3WithAPrivateCA(t *testing.T) {
	srv, ca := s3test.StartTLS(t)
	srv.CreateBucket(t, "tpch")
	flat := enginetest.TPCH(t, duckdb.LayoutFlat)
	enginetest.PutTree(t, srv, "tpch", "sf0.01/", flat)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	enginetest.WithCredentials(t)
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	qs := []string{"q6", "q14"}
	r := enginetest.InBucket(enginetest.Resolve(t, enginetest.TPCHWorkload(t), flat, qs...), flat, "s3://tpch/sf0.01", access)
	t.Setenv("AWS_CA_BUNDLE", caFile)
	_, got := enginetest.RunWorkload(t, bench.Spec{Engine: enginetest.DuckDB(), Data: "s3://tpch/sf0.01", Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	enginetest.AssertTPCHAnswers(t, "duckdb s3 over TLS", got, qs)

	other, _ := s3test.StartTLS(t) // another CA's certificate
	other.CreateBucket(t, "tpch")
	enginetest.PutTree(t, other, "tpch", "sf0.01/", flat)
	wrong := enginetest.InBucket(enginetest.Resolve(t, enginetest.TPCHWorkload(t), flat, qs...), flat, "s3://tpch/sf0.01",
		wire.S3Access{Endpoint: other.Endpoint, Region: s3test.Region, PathStyle: true})
	res := enginetest.Bench(t, bench.Spec{Engine: enginetest.DuckDB(), Data: "s3://tpch/sf0.01", Workload: wrong, Iterations: 1, QueryTimeout: time.Minute})
	if q := res.Queries[0]; q.Status != wire.StatusFailed || !strings.Contains(strings.ToLower(q.StderrTail), "certificate") {
		t.Errorf("%s from a server the bundle does not vouch for: %s: %q; want Failed, about the certificate", q.Name, q.Status, q.StderrTail)
	}
}
