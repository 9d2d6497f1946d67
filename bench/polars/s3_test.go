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

package polars

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/enginetest"
	"github.com/pqcache/pqcache/test/s3test"
)

// The conformance suite reads s3:// on every engine; these are Polars' own ways to reach a bucket.

// TestReadsFromS3WithAPrivateCA: an HTTPS endpoint whose certificate a private CA signed, trusted
// through AWS_CA_BUNDLE as a BenchRun with a CA bundle sets it (the system's roots do not know it).
func TestReadsFromS3WithAPrivateCA(t *testing.T) {
	e := engine(t)
	srv, ca := s3test.StartTLS(t)
	srv.CreateBucket(t, "tpch")
	flat := enginetest.TPCH(t, duckdb.LayoutFlat)
	enginetest.PutTree(t, srv, "tpch", "sf0.01/", flat)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	enginetest.WithCredentials(t)
	t.Setenv("SSL_CERT_FILE", "")
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	qs := []string{"q6", "q14"}
	r := enginetest.InBucket(enginetest.Resolve(t, enginetest.TPCHWorkload(t), flat, qs...), flat, "s3://tpch/sf0.01", access)
	t.Setenv("AWS_CA_BUNDLE", caFile)
	enginetest.AssertTPCHAnswers(t, "polars s3 over TLS", run(t, e, r, "s3://tpch/sf0.01"), qs)

	// Without the bundle the server's certificate is not trusted: the query fails, saying so (after
	// Polars' retries: about 17 s here).
	t.Setenv("AWS_CA_BUNDLE", "")
	res := enginetest.Bench(t, bench.Spec{Engine: e, Data: "s3://tpch/sf0.01", Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	if q := res.Queries[0]; q.Status != wire.StatusFailed || q.ExitCode != 1 || !strings.Contains(q.StderrTail, "certificate") {
		t.Errorf("%s over TLS without the CA bundle: %s (exit %d): %s; want Failed with exit 1, about the certificate", q.Name, q.Status, q.ExitCode, q.StderrTail)
	}
}

// TestStorageOptions: what run.py tells Polars' object store, from the workload's s3 block and the
// environment: addressing both ways, plain HTTP allowed only for an http:// endpoint, the
// environment's endpoint and region when the workload has none, and nothing for what is unset.
func TestStorageOptions(t *testing.T) {
	e := engine(t)
	cases := []struct {
		name string
		s3   any
		env  map[string]string
		want map[string]string
	}{
		{"path style over http", map[string]any{"Endpoint": "http://127.0.0.1:7070", "Region": "eu-west-1", "PathStyle": true},
			map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"},
			map[string]string{"aws_endpoint_url": "http://127.0.0.1:7070", "aws_region": "eu-west-1", "aws_access_key_id": "k",
				"aws_secret_access_key": "s", "aws_allow_http": "true", "aws_virtual_hosted_style_request": "false"}},
		{"AWS, virtual-hosted", map[string]any{"Region": "us-west-2", "PathStyle": false},
			map[string]string{"AWS_SESSION_TOKEN": "tok", "AWS_ACCESS_KEY_ID": ""},
			map[string]string{"aws_region": "us-west-2", "aws_session_token": "tok", "aws_virtual_hosted_style_request": "true"}},
		{"from the environment", nil,
			map[string]string{"AWS_ENDPOINT_URL": "https://s3.example:9000", "AWS_DEFAULT_REGION": "ap-south-1"},
			map[string]string{"aws_endpoint_url": "https://s3.example:9000", "aws_region": "ap-south-1"}},
	}
	for _, c := range cases {
		in, _ := json.Marshal(map[string]any{"s3": c.s3, "env": c.env})
		cmd := exec.CommandContext(t.Context(), e.Python, "-B", "-c", "import json, sys, run; v = json.load(sys.stdin); print(json.dumps(run.storage_options(v['s3'], v['env'])))")
		cmd.Dir = e.Dir
		cmd.Stdin = strings.NewReader(string(in))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, out)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: storage options (-want +got):\n%s", c.name, diff)
		}
	}
}
