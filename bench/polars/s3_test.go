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
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// putTree puts every Parquet file under dir into bucket of srv, under prefix.
func putTree(t *testing.T, srv *s3test.Server, bucket, prefix, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		srv.PutObject(t, bucket, prefix+filepath.ToSlash(rel), body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inBucket is r with its files under dir read from url instead (s3://bucket/prefix, where putTree
// put them): all of them, or those under the given prefixes (relative to dir), as a mixed-direct
// input reads its fresh partitions from the bucket and the rest from the volume.
func inBucket(r *workload.Resolved, dir, url string, s3 wire.S3Access, prefixes ...string) *workload.Resolved {
	out := *r
	out.S3 = &s3
	out.Tables = map[string]workload.ResolvedTable{}
	for name, table := range r.Tables {
		files := make([]string, len(table.Files))
		for i, f := range table.Files {
			rel, _ := filepath.Rel(dir, f)
			rel = filepath.ToSlash(rel)
			files[i] = f
			if len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(rel, p) }) {
				files[i] = strings.TrimSuffix(url, "/") + "/" + rel
			}
		}
		table.Files = files
		out.Tables[name] = table
	}
	return &out
}

// withCredentials gives the query processes the test server's keys, as a BenchRun's Job has them.
func withCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_CA_BUNDLE", "")
}

// TestReadsFromS3 uploads SF 0.01 to a real versitygw on 127.0.0.1, flat and partitioned, and runs
// the queries over s3:// URLs: DuckDB's answers, on both engines. A mixed-direct table (the volume's
// files, one lineitem partition from the bucket) gives them too, and without that partition the
// answer differs, so the bucket's file was read.
func TestReadsFromS3(t *testing.T) {
	e := engine(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	flat, partitioned := tpch(t, duckdb.LayoutFlat), tpch(t, duckdb.LayoutPartitioned)
	putTree(t, srv, "tpch", "sf0.01/flat/", flat)
	putTree(t, srv, "tpch", "sf0.01/partitioned/", partitioned)
	withCredentials(t)
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	w := tpchWorkload(t)

	all := w.QueryNames()
	assertSameAnswers(t, "polars s3 flat", run(t, e, inBucket(resolve(t, w, flat), flat, "s3://tpch/sf0.01/flat", access), "s3://tpch/sf0.01/flat"), all)
	streaming := e
	streaming.PolarsEngine = "streaming"
	some := []string{"q1", "q3", "q5", "q9", "q18", "q21"}
	r := inBucket(resolve(t, w, partitioned, some...), partitioned, "s3://tpch/sf0.01/partitioned", access)
	assertSameAnswers(t, "polars streaming s3 partitioned", run(t, streaming, r, "s3://tpch/sf0.01/partitioned"), some)

	overlay := []string{"q1", "q3"}
	local := resolve(t, w, partitioned, overlay...)
	mixed := inBucket(local, partitioned, "s3://tpch/sf0.01/partitioned", access, "lineitem/batch=1/")
	files := mixed.Tables["lineitem"].Files
	if n := len(slices.DeleteFunc(slices.Clone(files), func(f string) bool { return !strings.HasPrefix(f, "s3://") })); n == 0 || n == len(files) {
		t.Fatalf("the mixed lineitem table is not mixed: %v", files)
	}
	assertSameAnswers(t, "polars mixed-direct", run(t, e, mixed, partitioned), overlay)
	without := *local
	without.Tables = map[string]workload.ResolvedTable{}
	for name, table := range local.Tables {
		table.Files = slices.DeleteFunc(slices.Clone(table.Files), func(f string) bool { return strings.Contains(f, "/lineitem/batch=1/") })
		without.Tables[name] = table
	}
	for q, res := range run(t, e, &without, partitioned) {
		if res.Digest == duckdbResults(t)[q].Digest {
			t.Errorf("%s without the bucket's partition has the whole data's answer: the test would not see it unread", q)
		}
	}
}

// TestReadsFromS3WithAPrivateCA: an HTTPS endpoint whose certificate a private CA signed, trusted
// through AWS_CA_BUNDLE as a BenchRun with a CA bundle sets it (the system's roots do not know it).
func TestReadsFromS3WithAPrivateCA(t *testing.T) {
	e := engine(t)
	srv, ca := s3test.StartTLS(t)
	srv.CreateBucket(t, "tpch")
	flat := tpch(t, duckdb.LayoutFlat)
	putTree(t, srv, "tpch", "sf0.01/", flat)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	withCredentials(t)
	t.Setenv("SSL_CERT_FILE", "")
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	qs := []string{"q6", "q14"}
	r := inBucket(resolve(t, tpchWorkload(t), flat, qs...), flat, "s3://tpch/sf0.01", access)
	t.Setenv("AWS_CA_BUNDLE", caFile)
	assertSameAnswers(t, "polars s3 over TLS", run(t, e, r, "s3://tpch/sf0.01"), qs)

	// Without the bundle the server's certificate is not trusted: the query fails, saying so (after
	// Polars' retries: about 17 s here).
	t.Setenv("AWS_CA_BUNDLE", "")
	res, err := bench.Run(context.Background(), bench.Spec{Engine: e, Data: "s3://tpch/sf0.01", Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
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
