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

package cli

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/worker"
)

// TestProbeS3 probes a bucket prefix on a real versitygw as the directory it mirrors: every object
// under the prefix read once (not a sibling prefix's, not the cache's bookkeeping), the same files and
// bytes as the directory probe; --max-bytes bounds it; and `bench --probe-streams` does the same for
// s3:// data with the endpoint flags the Polars engine uses.
func TestProbeS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	dir := t.TempDir()
	var total int64
	put := func(key string, size int, local bool) {
		body := make([]byte, size)
		_, _ = rand.Read(body)
		srv.PutObject(t, "lake", key, body)
		if local {
			p := filepath.Join(dir, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 6 {
		size := 1<<20 + i*300_000
		put("tpch/lineitem/batch="+strconv.Itoa(i)+"/part.parquet", size, true)
		total += int64(size)
	}
	put("tpch/.pqcache/manifest", 5<<20, true) // the cache's bookkeeping: not data
	put("tpch-old/lineitem.parquet", 7<<20, false)
	s3flags := []string{"--endpoint", srv.Endpoint, "--region", s3test.Region, "--path-style"}

	probe := func(args ...string) wire.ProbeResult {
		t.Helper()
		out, err := run(t, append([]string{"bench", "probe", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("probe %v: %v\n%s", args, err, out)
		}
		var r wire.ProbeResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("probe %v: %v\n%s", args, err, out)
		}
		return r
	}
	local := probe("--data", filepath.Join(dir, "tpch"), "--streams", "3")
	for _, data := range []string{"s3://lake/tpch", "s3://lake/tpch/"} {
		r := probe(append([]string{"--data", data, "--streams", "3"}, s3flags...)...)
		if r.Files != 6 || r.Bytes != total || r.Streams != 3 || r.BytesPerSecond <= 0 {
			t.Errorf("probe of %s: %+v, want 6 files, %d bytes", data, r, total)
		}
		if r.Files != local.Files || r.Bytes != local.Bytes {
			t.Errorf("probe of %s read %d files, %d bytes; of the directory %d files, %d bytes", data, r.Files, r.Bytes, local.Files, local.Bytes)
		}
	}
	// Bounded: it stops once it has its fill, reading no object more than once.
	bounded := probe(append([]string{"--data", "s3://lake/tpch", "--streams", "2", "--max-bytes", strconv.Itoa(2 << 20)}, s3flags...)...)
	if bounded.Bytes < 2<<20 || bounded.Bytes >= total || bounded.Files >= 6 {
		t.Errorf("probe bounded to 2 MiB: %+v (all: %d bytes)", bounded, total)
	}
	// A mixed input: the static files from the directory, the fresh prefix from the bucket, each once.
	src, err := worker.ProbeInput(t.Context(), filepath.Join(dir, "tpch"), "s3://lake/tpch/", []string{"lineitem/batch=0/", "lineitem/batch=5/"},
		wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := src.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fromBucket := 0
	for _, f := range files {
		if strings.HasPrefix(f, bench.FreshTag) {
			fromBucket++
		}
	}
	mixed, err := bench.ProbeFrom(t.Context(), src, 2, -1)
	if err != nil || mixed.Files != 6 || mixed.Bytes != total || fromBucket != 2 {
		t.Errorf("probe of a mixed input: %+v (%v), %d of the files from the bucket; want 6 files, %d bytes, 2 from the bucket", mixed, err, fromBucket, total)
	}

	// A store that cannot be reached is an error, not a zero throughput.
	if _, err := run(t, "bench", "probe", "--data", "s3://lake/tpch", "--endpoint", "http://127.0.0.1:1", "--path-style"); err == nil {
		t.Error("a probe of an unreachable store succeeded")
	}

	// bench --probe-streams with s3:// data: after the queries, with the same flags.
	wl := filepath.Join(t.TempDir(), "workload.yaml")
	if err := os.WriteFile(wl, []byte("queries: [{name: one, sql: '-'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append([]string{"bench", "--engine", "command", "--command-arg", "true", "--workload", wl, "--iterations", "1", "--warmups", "0",
		"--data", "s3://lake/tpch", "--probe-streams", "4", "--probe-bytes", "-1", "--json", "-"}, s3flags...)...)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var res wire.BenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if res.Probe == nil || res.Probe.Files != 6 || res.Probe.Bytes != total || res.Probe.Streams != 4 {
		t.Errorf("bench's probe of s3://lake/tpch: %+v, want 6 files, %d bytes", res.Probe, total)
	}
}
