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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/canon"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/test/s3test"
)

// duckdbEnv makes this test binary a DuckDB query process (its last two arguments: query and data),
// so that both engines' answers go through bench.Run and its digest alike.
const duckdbEnv = "PQCACHE_TEST_DUCKDB_QUERY"

func TestMain(m *testing.M) {
	if os.Getenv(duckdbEnv) != "" {
		if err := duckdbQuery(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

func duckdbQuery(query, data string) error {
	q, err := strconv.Atoi(query)
	if err != nil {
		return err
	}
	db, err := duckdb.Open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if err := duckdb.CreateViews(ctx, db, data); err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	if _, err := duckdb.RunQuery(ctx, db, q, w); err != nil {
		return err
	}
	return w.Flush()
}

// engine is the Polars engine of this checkout; the test fails, saying what to run, without node or
// the modules.
func engine(t *testing.T) Engine {
	t.Helper()
	e, err := Find(".")
	if err != nil {
		t.Fatalf("the Polars engine cannot run here: %v", err)
	}
	e.Threads = 2
	return e
}

// The SF 0.01 data sets, generated once per test binary.
var (
	dataOnce sync.Once
	dataDirs map[duckdb.Layout]string
	dataErr  error
)

func tpch(t *testing.T, layout duckdb.Layout) string {
	t.Helper()
	dataOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pqcache-polars-test-")
		if err != nil {
			dataErr = err
			return
		}
		ctx := context.Background()
		ext := filepath.Join(dir, "tpch.duckdb_extension")
		if dataErr = duckdb.BuildTPCHExtension(ctx, ext); dataErr != nil {
			return
		}
		dataDirs = map[duckdb.Layout]string{}
		for _, l := range []duckdb.Layout{duckdb.LayoutFlat, duckdb.LayoutPartitioned} {
			out := filepath.Join(dir, string(l))
			if _, dataErr = duckdb.Generate(ctx, duckdb.GenOptions{Scale: 0.01, Out: out, Layout: l, FilesPerTable: 3, Extension: ext, Threads: 2}); dataErr != nil {
				return
			}
			dataDirs[l] = out
		}
	})
	if dataErr != nil {
		t.Fatalf("generating SF 0.01: %v", dataErr)
	}
	return dataDirs[layout]
}

func allQueries() []int {
	qs := make([]int, 22)
	for i := range qs {
		qs[i] = i + 1
	}
	return qs
}

// run runs queries once each and returns their results by query, failing on any query that failed.
func run(t *testing.T, e bench.Engine, data string, queries []int) map[int]wire.QueryResult {
	t.Helper()
	res, err := bench.Run(context.Background(), bench.Spec{Engine: e, Data: data, Queries: queries, Iterations: 1, QueryTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]wire.QueryResult{}
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			t.Errorf("%s q%d over %s: %s (exit %d): %s", e.Name(), q.Query, data, q.Status, q.ExitCode, q.StderrTail)
		}
		out[q.Query] = q
	}
	return out
}

func duckdbEngine() bench.Engine {
	return bench.SelfEngine{EngineName: "duckdb", CommandEngine: bench.CommandEngine{Args: []string{os.Args[0], "-test.run=^$", "{query}", "{data}"}}}
}

// duckdbDigests are DuckDB's answers over the flat SF 0.01 data, computed once.
var (
	duckOnce    sync.Once
	duckResults map[int]wire.QueryResult
)

func duckdbResults(t *testing.T) map[int]wire.QueryResult {
	t.Helper()
	data := tpch(t, duckdb.LayoutFlat)
	duckOnce.Do(func() {
		t.Setenv(duckdbEnv, "1")
		duckResults = run(t, duckdbEngine(), data, allQueries())
	})
	if len(duckResults) != 22 {
		t.Fatal("DuckDB did not answer every query")
	}
	return duckResults
}

func assertSameAnswers(t *testing.T, what string, got map[int]wire.QueryResult, queries []int) {
	t.Helper()
	want := duckdbResults(t)
	for _, q := range queries {
		if got[q].Digest == "" || got[q].Digest != want[q].Digest || got[q].Rows != want[q].Rows {
			t.Errorf("q%d %s: digest %s (%d rows), DuckDB %s (%d rows)", q, what, got[q].Digest, got[q].Rows, want[q].Digest, want[q].Rows)
		}
	}
}

// TestAllQueriesMatchDuckDB runs the 22 queries on Polars over both layouts: every one succeeds and
// returns DuckDB's answer, digest for digest.
func TestAllQueriesMatchDuckDB(t *testing.T) {
	e := engine(t)
	for _, layout := range []duckdb.Layout{duckdb.LayoutFlat, duckdb.LayoutPartitioned} {
		got := run(t, e, tpch(t, layout), allQueries())
		assertSameAnswers(t, "polars "+string(layout), got, allQueries())
	}
	// A wrong answer shows: q1 without its date filter differs. (The digest is not trivially equal.)
	if duckdbResults(t)[1].Digest == duckdbResults(t)[6].Digest {
		t.Fatal("distinct queries share a digest")
	}
}

// TestStreamingEngine runs a few queries on Polars' streaming engine: same answers.
func TestStreamingEngine(t *testing.T) {
	e := engine(t)
	e.Streaming = true
	qs := []int{1, 3, 9, 13, 18, 21}
	assertSameAnswers(t, "polars streaming", run(t, e, tpch(t, duckdb.LayoutFlat), qs), qs)
}

// TestReadsFromS3 uploads SF 0.01 to a real versitygw on 127.0.0.1, flat and partitioned, and runs
// all 22 queries with --data s3://...: DuckDB's answers. A mixed-direct overlay (the volume without a
// lineitem partition, the partition straight from the bucket) gives them too, and without the
// overlay the answer differs.
func TestReadsFromS3(t *testing.T) {
	e := engine(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	for _, layout := range []duckdb.Layout{duckdb.LayoutFlat, duckdb.LayoutPartitioned} {
		dir := tpch(t, layout)
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
				return err
			}
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			srv.PutObject(t, "tpch", "sf0.01/"+string(layout)+"/"+filepath.ToSlash(rel), body)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	e.S3 = wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}

	assertSameAnswers(t, "polars s3 flat", run(t, e, "s3://tpch/sf0.01/flat", allQueries()), allQueries())
	partitioned := []int{1, 3, 5, 9, 18, 21}
	assertSameAnswers(t, "polars s3 partitioned", run(t, e, "s3://tpch/sf0.01/partitioned/", partitioned), partitioned)

	// mixed-direct: a volume that lacks lineitem/batch=1, which the bucket has.
	volume := filepath.Join(t.TempDir(), "volume")
	if err := os.CopyFS(volume, os.DirFS(tpch(t, duckdb.LayoutPartitioned))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(volume, "lineitem", "batch=1")); err != nil {
		t.Fatal(err)
	}
	overlay := []int{1, 3}
	without := run(t, e, volume, overlay)
	mixed := e
	mixed.FreshData, mixed.FreshPrefixes = "s3://tpch/sf0.01/partitioned", []string{"lineitem/batch=1/"}
	assertSameAnswers(t, "polars mixed-direct", run(t, mixed, volume, overlay), overlay)
	// The same through the environment a BenchRun sets for a command engine.
	t.Setenv("PQCACHE_FRESH_URL", "s3://tpch/sf0.01/partitioned")
	t.Setenv("PQCACHE_FRESH_PREFIXES", "lineitem/batch=1")
	assertSameAnswers(t, "polars mixed-direct (environment)", run(t, e, volume, overlay), overlay)
	for _, q := range overlay {
		if without[q].Digest == duckdbResults(t)[q].Digest {
			t.Errorf("q%d without the fresh partition has the whole data's answer: the test would not see a missing overlay", q)
		}
	}
}

// putFlat puts the flat SF 0.01 files into bucket tpch of srv, under prefix.
func putFlat(t *testing.T, srv *s3test.Server, prefix string) {
	t.Helper()
	srv.CreateBucket(t, "tpch")
	files, err := filepath.Glob(filepath.Join(tpch(t, duckdb.LayoutFlat), "*.parquet"))
	if err != nil || len(files) != 8 {
		t.Fatalf("SF 0.01 files: %v %v", files, err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srv.PutObject(t, "tpch", prefix+filepath.Base(f), body)
	}
}

// TestReadsFromS3WithAPrivateCA: an HTTPS endpoint whose certificate a private CA signed, trusted
// through AWS_CA_BUNDLE as a BenchRun with a CA bundle sets it (the system's roots do not know it).
func TestReadsFromS3WithAPrivateCA(t *testing.T) {
	e := engine(t)
	srv, ca := s3test.StartTLS(t)
	putFlat(t, srv, "sf0.01/")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("SSL_CERT_FILE", "")
	e.S3 = wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	qs := []int{6, 14}
	t.Setenv("AWS_CA_BUNDLE", caFile)
	assertSameAnswers(t, "polars s3 over TLS", run(t, e, "s3://tpch/sf0.01", qs), qs)

	// Without the bundle the server's certificate is not trusted: the query fails.
	t.Setenv("AWS_CA_BUNDLE", "")
	res, err := bench.Run(context.Background(), bench.Spec{Engine: e, Data: "s3://tpch/sf0.01", Queries: []int{6}, Iterations: 1, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if q := res.Queries[0]; q.Status != wire.StatusFailed {
		t.Errorf("q6 over TLS without the CA bundle: %s, want Failed", q.Status)
	}
}

// TestMixedStagedOverlay moves a partition from the volume into a staging directory, and puts a
// stale copy of another in the volume: the overlay reads the staged files and ignores the stale one.
func TestMixedStagedOverlay(t *testing.T) {
	e := engine(t)
	volume, staged := filepath.Join(t.TempDir(), "volume"), filepath.Join(t.TempDir(), "staged")
	if err := os.CopyFS(volume, os.DirFS(tpch(t, duckdb.LayoutPartitioned))); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lineitem/batch=2", "orders/batch=0"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(staged, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(volume, p), filepath.Join(staged, p)); err != nil {
			t.Fatal(err)
		}
	}
	// A stale orders/batch=0 on the volume (a copy of batch=1) must not be read.
	if err := os.CopyFS(filepath.Join(volume, "orders", "batch=0"), os.DirFS(filepath.Join(volume, "orders", "batch=1"))); err != nil {
		t.Fatal(err)
	}
	e.FreshData, e.FreshPrefixes = staged, []string{"lineitem/batch=2/", "orders/batch=0"}
	qs := []int{1, 3, 4}
	assertSameAnswers(t, "polars mixed-staged", run(t, e, volume, qs), qs)
}

// TestFormatMatchesCanon feeds the same values to format.js and to bench/canon: every one prints
// alike, so an answer the engines agree on digests alike.
func TestFormatMatchesCanon(t *testing.T) {
	e := engine(t)
	floats := []float64{0, -0.0, 0.125, -0.125, 2.675, 1.005, 1.0 / 3, -0.001, 1e-7, 5e-3, 4.999999e-3, 1.5e21, 123456789.125,
		56586554400.7312, 0.07, 100, -2.5e-5, math.MaxFloat64, math.SmallestNonzeroFloat64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		floats = append(floats, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(24)-6)))
	}
	decimals := []string{"0", "17", "-17.005", "11604.9298", "116049.2450", "-0.0049", "0.995", "99.9951", "-0.00"}
	for range 500 {
		decimals = append(decimals, strconv.FormatInt(rng.Int64N(2e12)-1e12, 10)+"."+fmt.Sprintf("%04d", rng.IntN(10000)))
	}
	strs := []string{"plain", "a|b", `back\slash`, "line\nbreak\r", ""}
	in, _ := json.Marshal(map[string]any{"floats": floats, "decimals": decimals, "strings": strs})
	script := `const f = require("./format.js");
const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify({floats: v.floats.map(f.formatFloat), decimals: v.decimals.map(f.roundDecimal), strings: v.strings.map(f.escapeString)}));`
	cmd := exec.Command(e.Node, "-e", script)
	cmd.Dir = e.Dir
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("format.js: %v", err)
	}
	var got struct{ Floats, Decimals, Strings []string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Floats) != len(floats) || len(got.Decimals) != len(decimals) || len(got.Strings) != len(strs) {
		t.Fatalf("format.js answered %d/%d/%d values", len(got.Floats), len(got.Decimals), len(got.Strings))
	}
	for i, v := range floats {
		if want := canon.Float(v); got.Floats[i] != want {
			t.Errorf("float %v: format.js %q, canon %q", v, got.Floats[i], want)
		}
	}
	for i, s := range decimals {
		if want := canon.Round(s); got.Decimals[i] != want {
			t.Errorf("decimal %s: format.js %q, canon %q", s, got.Decimals[i], want)
		}
	}
	for i, s := range strs {
		if want := canon.String(s); got.Strings[i] != want {
			t.Errorf("string %q: format.js %q, canon %q", s, got.Strings[i], want)
		}
	}
}

// TestFindFailsClearly: without the modules, Find says to run make polars-modules.
func TestFindFailsClearly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Find(dir)
	if err == nil || !strings.Contains(err.Error(), "make polars-modules") {
		t.Fatalf("Find without node_modules: %v", err)
	}
	if _, err := Find(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Find of a missing directory succeeded")
	}
}
