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

package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
)

// The tests use this binary as the query engine: run with fakeEngineEnv set, it behaves per query.
const fakeEngineEnv = "PQCACHE_FAKE_ENGINE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEngineEnv) != "" {
		fakeEngine(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1])
		return
	}
	os.Exit(m.Run())
}

// fakeEngine answers query q over data the way a real engine would, or fails the way real ones do.
func fakeEngine(q, data string) {
	switch q {
	case "1": // three rows in a random order, after allocating 32 MiB
		b := make([]byte, 32<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(150 * time.Millisecond)
		rows := []string{"FRANCE|1", "GERMANY|2", "JAPAN|" + data}
		rand.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		fmt.Println(strings.Join(rows, "\n"))
		os.Exit(int(b[0]) - 1)
	case "2":
		fmt.Fprintln(os.Stderr, "Binder Error: table lineitem does not exist")
		os.Exit(3)
	case "3":
		time.Sleep(10 * time.Second)
	case "4":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Second)
	case "5":
		fmt.Println(rand.Int())
	case "6": // reads everything a server on the loopback sends, as an engine reads from S3
		conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", os.Getenv(fakeNetAddrEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n, err := io.Copy(io.Discard, conn)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(n)
	case "7": // prints its own oom_score_adj, once its runner has had time to set it
		time.Sleep(200 * time.Millisecond)
		b, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(string(b))
	}
}

// fakeNetAddrEnv is the address query 6 of the fake engine reads from.
const fakeNetAddrEnv = "PQCACHE_FAKE_NET_ADDR"

// fakeSpec runs the fake engine's queries, named by their numbers.
func fakeSpec(queries ...int) Spec {
	w := &workload.Resolved{Workload: "fake", Tables: map[string]workload.ResolvedTable{}}
	for _, q := range queries {
		w.Queries = append(w.Queries, workload.Query{Name: strconv.Itoa(q), SQL: "fake"})
	}
	return Spec{
		Engine:       CommandEngine{Args: []string{os.Args[0], "-test.run=^$", "{query}", "{data}"}},
		Data:         "/data/tpch",
		Workload:     w,
		Iterations:   3,
		Warmups:      1,
		QueryTimeout: 700 * time.Millisecond,
	}
}

func TestRunRecordsTimingsMemoryAndFailures(t *testing.T) {
	t.Setenv(fakeEngineEnv, "1")
	var seen []string
	spec := fakeSpec(1, 2, 3, 4, 5)
	spec.Progress = func(q wire.QueryResult) { seen = append(seen, q.Name) }
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"1", "2", "3", "4", "5"}) {
		t.Errorf("progress saw %v", seen)
	}
	byQuery := map[string]wire.QueryResult{}
	for _, q := range res.Queries {
		byQuery[q.Name] = q
	}
	q1 := byQuery["1"]
	if q1.Status != wire.StatusSucceeded || len(q1.Millis) != 3 || q1.Rows != 3 || q1.Digest == "" {
		t.Fatalf("query 1: %+v", q1)
	}
	if q1.MinMillis < 150 || q1.MinMillis > q1.MedianMillis || q1.MedianMillis > q1.MaxMillis {
		t.Errorf("query 1 times: min %d median %d max %d", q1.MinMillis, q1.MedianMillis, q1.MaxMillis)
	}
	if q1.SpreadPermille == nil || *q1.SpreadPermille*q1.MedianMillis > 1000*(q1.MaxMillis-q1.MinMillis) {
		t.Errorf("query 1 of 3 iterations (%v) has no spread, or one wider than its range: %v", q1.Millis, q1.SpreadPermille)
	}
	if q1.PeakAnonBytes < 28<<20 || q1.PeakMemoryBytes < q1.PeakAnonBytes {
		t.Errorf("query 1 memory: total %d anon %d (want ≥ 28 MiB anon)", q1.PeakMemoryBytes, q1.PeakAnonBytes)
	}
	for q, want := range map[string]string{"2": wire.StatusFailed, "3": wire.StatusTimeout, "4": wire.StatusOOMKilled, "5": wire.StatusFailed} {
		if got := byQuery[q]; got.Status != want || got.Digest != "" || len(got.Millis) != 0 {
			t.Errorf("query %s: %+v, want status %s", q, got, want)
		}
	}
	if !strings.Contains(byQuery["2"].StderrTail, "Binder Error") || byQuery["2"].ExitCode != 3 {
		t.Errorf("query 2 keeps no stderr or exit code: %+v", byQuery["2"])
	}
	if !strings.Contains(byQuery["5"].StderrTail, "other rows") {
		t.Errorf("query 5's changing answer is not reported: %+v", byQuery["5"])
	}
	if !slices.Equal(res.FailedQueries, []string{"2", "3", "4", "5"}) || res.GeometricMeanMillis != q1.MedianMillis {
		t.Errorf("failed %v, geometric mean %d (query 1 median %d)", res.FailedQueries, res.GeometricMeanMillis, q1.MedianMillis)
	}

	// The digest does not depend on row order, and a second run agrees.
	again, err := Run(context.Background(), fakeSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	if again.Queries[0].Digest != q1.Digest {
		t.Errorf("digest changed between runs: %s, %s", q1.Digest, again.Queries[0].Digest)
	}
	once := fakeSpec(1)
	once.Iterations = 1
	single, err := Run(context.Background(), once)
	if err != nil {
		t.Fatal(err)
	}
	if q := single.Queries[0]; q.Status != wire.StatusSucceeded || q.SpreadPermille != nil {
		t.Errorf("one iteration: %+v, want a success whose spread is unknown (nil), not zero", q)
	}
	other := fakeSpec(1)
	other.Data = "/elsewhere"
	differs, _ := Run(context.Background(), other)
	if differs.Queries[0].Digest == q1.Digest {
		t.Error("different rows gave the same digest")
	}
}

// TestNetworkReadBytes runs a query that reads 8 MiB from a server on 127.0.0.1: counting the
// loopback, each measured iteration received at least that, and the run at least that for every
// iteration, warm-up included; with measuring off, nothing. (Other traffic on the machine's loopback
// can only add to these lower bounds.)
func TestNetworkReadBytes(t *testing.T) {
	const body = 8 << 20
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.CopyN(c, zeros{}, body)
			}()
		}
	}()
	t.Setenv(fakeEngineEnv, "1")
	t.Setenv(fakeNetAddrEnv, ln.Addr().String())
	spec := fakeSpec(6)
	spec.QueryTimeout = 30 * time.Second
	spec.NetInterfaces = netdev.Interfaces{Only: []string{netdev.Loopback}}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	q := res.Queries[0]
	if q.Status != wire.StatusSucceeded {
		t.Fatalf("query 6: %+v", q)
	}
	if q.NetworkReadBytes < body {
		t.Errorf("query 6 received %d bytes in an iteration, want at least %d", q.NetworkReadBytes, body)
	}
	if runs := int64(spec.Warmups + spec.Iterations); res.NetworkReadBytes < runs*body || res.NetworkReadBytes < q.NetworkReadBytes {
		t.Errorf("the run received %d bytes, want at least %d (%d iterations of %d)", res.NetworkReadBytes, runs*body, runs, body)
	}
	t.Logf("per iteration %d bytes, whole run %d bytes (%d sent per iteration)", q.NetworkReadBytes, res.NetworkReadBytes, body)

	spec.NetInterfaces = netdev.Interfaces{Off: true}
	if res, err = Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if res.NetworkReadBytes != 0 || res.Queries[0].NetworkReadBytes != 0 {
		t.Errorf("with measuring off: run %d, query %d bytes", res.NetworkReadBytes, res.Queries[0].NetworkReadBytes)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestDigestRows(t *testing.T) {
	d := func(s string) string {
		_, dg, err := digestRows(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return dg
	}
	if d("a\nb\nc\n") != d("c\r\na\nb") {
		t.Error("order or line endings changed the digest")
	}
	for _, other := range []string{"a\nb\n", "a\nb\nc\nc\n", "a\nb\nd\n"} {
		if d(other) == d("a\nb\nc\n") {
			t.Errorf("%q has the digest of a,b,c", other)
		}
	}
}

func TestProbeReadsEveryFileOnce(t *testing.T) {
	dir := t.TempDir()
	var want int64
	for i, size := range []int{0, 1, 3 << 20, 123457} {
		p := filepath.Join(dir, "t", fmt.Sprintf("part-%d.parquet", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		want += int64(size)
	}
	// The cache's bookkeeping is not input data.
	if err := os.MkdirAll(filepath.Join(dir, ".pqcache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".pqcache", "manifest.db"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Probe(context.Background(), dir, 3, -1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 4 || r.Bytes != want || r.Streams != 3 || r.BytesPerSecond <= 0 {
		t.Fatalf("probe: %+v, want 4 files, %d bytes", r, want)
	}
	// Bounded: it stops after about maxBytes (each stream finishes the read it is in), not after the data set.
	r, err = Probe(context.Background(), dir, 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files >= 4 || r.Bytes < 1<<20 || r.Bytes > 1<<20+probeBuffer {
		t.Fatalf("probe bounded at 1 MiB: %+v, want about 1 MiB of the %d bytes, not every file", r, want)
	}
}

func TestAStoppedRunIsNotAnOOMKill(t *testing.T) {
	t.Setenv(fakeEngineEnv, "1")
	// Query 3 sleeps for 10 s; the run is stopped (SIGTERM to the runner, its deadline) after 300 ms.
	// The runner kills the query's process group with SIGKILL, which must not read as the OOM killer.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	spec := fakeSpec(3)
	spec.QueryTimeout, spec.Warmups, spec.Iterations = time.Minute, 0, 1
	var got []wire.QueryResult
	spec.Progress = func(q wire.QueryResult) { got = append(got, q) }
	_, err := Run(ctx, spec)
	if err == nil {
		t.Fatal("a stopped run reported no error")
	}
	if len(got) != 1 || got[0].Status == wire.StatusOOMKilled || got[0].Status == wire.StatusTimeout || !strings.Contains(got[0].StderrTail, "stopped with the run") {
		t.Fatalf("query of a stopped run: %+v", got)
	}
}

func TestStderrTailStartsAtAWholeCharacter(t *testing.T) {
	var tail tailBuffer
	// "é" is two bytes: 2,049 of them leave a cut between the two bytes of one.
	fmt.Fprint(&tail, strings.Repeat("é", stderrTailBytes/2+1)+"x")
	got := tail.String()
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "x") || len(got) < stderrTailBytes-utf8.UTFMax {
		t.Fatalf("tail of %d bytes, valid UTF-8 %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-3:])
	}
}

// TestTheQueryIsTheOOMKillersFirstChoice: a query process runs with oom_score_adj 1000, so that in a
// memory-limited container the OOM killer takes the query that outgrew the limit and not the runner
// (whose resident set, its binary's pages, can be the larger while a query starts).
func TestTheQueryIsTheOOMKillersFirstChoice(t *testing.T) {
	t.Setenv(fakeEngineEnv, "1")
	spec := fakeSpec(7)
	spec.QueryTimeout, spec.Warmups, spec.Iterations = 10*time.Second, 0, 1
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := digestRows(strings.NewReader("1000\n"))
	if len(res.Queries) != 1 || res.Queries[0].Status != wire.StatusSucceeded || res.Queries[0].Digest != want {
		t.Fatalf("the query's oom_score_adj is not 1000: %+v (the digest of 1000 is %s)", res.Queries, want)
	}
}
