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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/enginetest"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// scanned are the lineitem columns queries 1 and 6 read: what Polars must fetch from the bucket at
// the least (its projection pushdown reads no other column chunk).
var scanned = map[string][]string{
	"q1": {"l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"},
	"q6": {"l_shipdate", "l_discount", "l_quantity", "l_extendedprice"},
}

// columnBytes is the compressed size of the named columns' chunks in a Parquet file, from its footer.
func columnBytes(t *testing.T, path string, columns []string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if len(c.MetaData.PathInSchema) == 1 && slices.Contains(columns, c.MetaData.PathInSchema[0]) {
				n += c.MetaData.TotalCompressedSize
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has none of the columns %v", path, columns)
	}
	return n
}

// TestNetworkReadBytesFromS3 runs queries 1 and 6 on Polars over s3:// from a versitygw on
// 127.0.0.1, counting the loopback: each iteration received at least the compressed bytes of the
// lineitem columns it scans, and the run at least that for every iteration, warm-ups included. The
// machine's other processes share the loopback: they can only add to these lower bounds.
func TestNetworkReadBytesFromS3(t *testing.T) {
	e := engine(t)
	dir := enginetest.TPCH(t, duckdb.LayoutFlat)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	enginetest.PutTree(t, srv, "tpch", "net/", dir)
	enginetest.WithCredentials(t)
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	local := enginetest.Resolve(t, enginetest.TPCHWorkload(t), dir, "q1", "q6")
	workloads := map[string]*workload.Resolved{dir: local, "s3://tpch/net": enginetest.InBucket(local, dir, "s3://tpch/net", access)}
	lineitem := filepath.Join(dir, "lineitem.parquet")
	info, err := os.Stat(lineitem)
	if err != nil {
		t.Fatal(err)
	}

	spec := bench.Spec{Engine: e, Iterations: 2, Warmups: 1, QueryTimeout: 2 * time.Minute,
		NetInterfaces: netdev.Interfaces{Only: []string{netdev.Loopback}}}
	run := func(data string) *wire.BenchResult {
		t.Helper()
		s := spec
		s.Data, s.Workload = data, workloads[data]
		res := enginetest.Bench(t, s)
		for _, q := range res.Queries {
			if q.Status != wire.StatusSucceeded {
				t.Fatalf("%s over %s: %s: %s", q.Name, data, q.Status, q.StderrTail)
			}
		}
		return res
	}

	s3 := run("s3://tpch/net")
	var floor int64
	for _, q := range s3.Queries {
		want := columnBytes(t, lineitem, scanned[q.Name])
		t.Logf("%s over s3: %d bytes received per iteration; its lineitem columns are %d bytes, the file %d", q.Name, q.NetworkReadBytes, want, info.Size())
		if q.NetworkReadBytes < want {
			t.Errorf("%s over s3 received %d bytes in an iteration, less than the %d bytes of the columns it scans", q.Name, q.NetworkReadBytes, want)
		}
		floor += int64(spec.Warmups+spec.Iterations) * want
	}
	if s3.NetworkReadBytes < floor {
		t.Errorf("the s3 run received %d bytes, less than %d (every iteration's scanned columns)", s3.NetworkReadBytes, floor)
	}
}

// envOwnNetwork marks this test binary re-executed in a network namespace of its own, where the
// loopback carries nothing but what the test itself sends.
const envOwnNetwork = "PQCACHE_TEST_OWN_NETWORK"

// TestNoNetworkReadBytesFromTheVolume runs queries 1 and 6 on Polars over the volume and counts the
// loopback: not one byte. On the host's loopback every other process's traffic would count too
// (megabytes a second while make test runs), so the test re-executes itself in a network namespace of
// its own (unshare), whose loopback only its queries could use.
func TestNoNetworkReadBytesFromTheVolume(t *testing.T) {
	if os.Getenv(envOwnNetwork) == "" {
		runInOwnNetwork(t, "^TestNoNetworkReadBytesFromTheVolume$")
		return
	}
	dir := enginetest.TPCH(t, duckdb.LayoutFlat)
	res := enginetest.Bench(t, bench.Spec{Engine: engine(t), Data: dir, Workload: enginetest.Resolve(t, enginetest.TPCHWorkload(t), dir, "q1", "q6"),
		Iterations: 2, Warmups: 1, QueryTimeout: 2 * time.Minute, NetInterfaces: netdev.Interfaces{Only: []string{netdev.Loopback}}})
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			t.Fatalf("%s over the volume: %s: %s", q.Name, q.Status, q.StderrTail)
		}
		if q.NetworkReadBytes != 0 {
			t.Errorf("%s over the volume received %d bytes in an iteration, want none", q.Name, q.NetworkReadBytes)
		}
	}
	if res.NetworkReadBytes != 0 {
		t.Errorf("the volume run received %d bytes, want none", res.NetworkReadBytes)
	}
}

// runInOwnNetwork runs this test binary's tests that match pattern in a new network namespace, its
// loopback up, and fails t with their output if they fail. Root makes the namespace directly; anyone
// else through a user namespace of their own.
func runInOwnNetwork(t *testing.T, pattern string) {
	t.Helper()
	ip, err := exec.LookPath("ip")
	if err != nil {
		ip = "/usr/sbin/ip"
	}
	args := []string{"--net"}
	if os.Geteuid() != 0 {
		args = append(args, "--map-root-user")
	}
	args = append(args, "--", "sh", "-c", `"$0" link set lo up && exec "$@"`, ip, os.Args[0], "-test.run", pattern, "-test.v")
	cmd := exec.CommandContext(t.Context(), "unshare", args...)
	cmd.Env = append(os.Environ(), envOwnNetwork+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace of its own:\n%s", out)
	if err != nil {
		t.Fatalf("the test in its own network namespace: %v", err)
	}
}
