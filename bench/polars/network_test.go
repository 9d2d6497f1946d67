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
	"fmt"
	"os"
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

// loopbackNoise is what the loopback received in d with nothing of this test running: other
// processes on the machine share it.
func loopbackNoise(d time.Duration) int64 {
	lo := netdev.Interfaces{Only: []string{netdev.Loopback}}
	before := netdev.Read(lo)
	time.Sleep(d)
	return netdev.Read(lo).Since(before)
}

// TestNetworkReadBytesFromS3 runs queries 1 and 6 on Polars over s3:// from a versitygw on
// 127.0.0.1, counting the loopback: each iteration received at least the compressed bytes of the
// lineitem columns it scans, and the run at least that for every iteration, warm-ups included. The
// same queries over the volume receive nothing but the loopback's background traffic, which the test
// measures beside them over as long a window (and which can only add to the s3 figures' lower bounds).
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

	// Over the volume: the loopback's background only. The machine's other processes share the
	// loopback (here, at times, megabytes a second), so each attempt measures that background right
	// after the run, in two windows as long as the run; a burst of someone else's traffic during the
	// run fails an attempt, not the test.
	var attempts []string
	for range 3 {
		vol := run(dir)
		window := time.Duration(vol.WallMillis) * time.Millisecond
		background := max(loopbackNoise(window), loopbackNoise(window))
		t.Logf("volume run: %d bytes received in %d ms; the loopback's background over as long: %d", vol.NetworkReadBytes, vol.WallMillis, background)
		if vol.NetworkReadBytes <= background+(256<<10) {
			return
		}
		attempts = append(attempts, fmt.Sprintf("%d bytes (background %d)", vol.NetworkReadBytes, background))
	}
	t.Errorf("the volume run received more than the loopback's background in every attempt: %v", attempts)
}
