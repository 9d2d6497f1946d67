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

package cache_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/test/testfiles"
)

// byteProxy stands between a sync and the server, on 127.0.0.1: it counts the bytes of GET responses
// it sends, per key, knows which keys have GETs in flight, and sends at most rate bytes per second in
// all, in small writes, so that little sits in socket buffers when a client dies.
type byteProxy struct {
	*httptest.Server
	rate     int64
	mu       sync.Mutex
	sent     map[string]int64
	inFlight map[string]int
	next     time.Time // when the rate allows the next write
}

func newByteProxy(t *testing.T, target string, rate int64) *byteProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &byteProxy{rate: rate, sent: map[string]int64{}, inFlight: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // every write goes out at once
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || resp.Request.URL.Query().Has("list-type") {
			return nil
		}
		key := resp.Request.URL.Path
		p.mu.Lock()
		p.inFlight[key]++
		p.mu.Unlock()
		resp.Body = &throttled{ReadCloser: resp.Body, p: p, key: key}
		return nil
	}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p
}

type throttled struct {
	io.ReadCloser
	p      *byteProxy
	key    string
	closed bool
}

func (r *throttled) Read(b []byte) (int, error) {
	b = b[:min(len(b), 32<<10)]
	n, err := r.ReadCloser.Read(b)
	if n > 0 {
		r.p.mu.Lock()
		now := time.Now()
		if r.p.next.Before(now) {
			r.p.next = now
		}
		r.p.next = r.p.next.Add(time.Duration(int64(n) * int64(time.Second) / r.p.rate))
		wait := r.p.next.Sub(now)
		r.p.mu.Unlock()
		time.Sleep(wait)
		r.p.mu.Lock()
		r.p.sent[r.key] += int64(n)
		r.p.mu.Unlock()
	}
	return n, err
}

func (r *throttled) Close() error {
	r.p.mu.Lock()
	if !r.closed {
		r.closed = true
		r.p.inFlight[r.key]--
	}
	r.p.mu.Unlock()
	return r.ReadCloser.Close()
}

// keysInFlight returns the keys with a GET still sending.
func (p *byteProxy) keysInFlight() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []string
	for k, n := range p.inFlight {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

func (p *byteProxy) totalSent() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, b := range p.sent {
		n += b
	}
	return n
}

// childSync returns a child process that syncs e through endpoint, as `pqcache sync` would.
func childSync(t *testing.T, e *env, endpoint string, partSize int64, parallel int) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), self)
	cmd.Env = append(os.Environ(), childEnv+"=1",
		"AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey,
		"CHILD_BUCKET="+e.bucket, "CHILD_PREFIX="+e.prefix, "CHILD_DIR="+e.dir, "CHILD_ENDPOINT="+endpoint,
		"CHILD_PART_SIZE="+strconv.FormatInt(partSize, 10), "CHILD_PARALLEL="+strconv.Itoa(parallel))
	return cmd
}

// TestKilledSyncResumesLargeFiles SIGKILLs a sync of large objects at random moments and runs it
// again each time; in the end every file is complete and verified, and the bytes fetched more than
// once are at most one part for each file that was being fetched at a kill.
func TestKilledSyncResumesLargeFiles(t *testing.T) {
	const (
		partSize = 4 << 20
		parallel = 2
		kills    = 8
	)
	e := newEnv(t)
	want := map[string][]byte{}
	for i := range 3 {
		k := fmt.Sprintf("t/big-%d.bin", i)
		want[k] = testfiles.Random(18<<20+i*1000, uint64(i+1)) // ranges of 4 MiB, CRC64NVME combined
		e.put(k, want[k])
	}
	var parts [][]byte
	for i := range 4 {
		parts = append(parts, testfiles.Random(5<<20, uint64(20+i)))
	}
	e.putMultipart("t/parts.bin", parts, types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite) // upload parts
	want["t/parts.bin"] = bytes.Join(parts, nil)
	var total int64
	for _, v := range want {
		total += int64(len(v))
	}
	proxy := newByteProxy(t, e.srv.Endpoint, 24<<20)

	rng := rand.New(rand.NewPCG(7, 7))
	var allowed int64
	killed := 0
	for i := 0; i < kills; i++ {
		cmd := childSync(t, e, proxy.URL, partSize, parallel)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: %v\n%s", i, err, out.String())
			}
			i = kills // finished before the kill
		case <-time.After(time.Duration(300+rng.IntN(1200)) * time.Millisecond):
			inFlight := proxy.keysInFlight()
			_ = cmd.Process.Kill()
			<-exited
			killed++
			allowed += int64(len(inFlight)) * partSize
			t.Logf("kill %d: %d of %d bytes sent so far, in flight: %v", killed, proxy.totalSent(), total, inFlight)
		}
	}
	if killed < 3 {
		t.Fatalf("only %d runs were killed: the test did not test resuming", killed)
	}
	rep := e.mustSync(func(o *cache.Options) { o.PartSize, o.Parallelism = partSize, parallel; o.Source = "s3://data/tpch/" })
	for k, v := range want {
		e.expectFile(k, v)
	}
	e.expectVerified()
	// The last, in-process run went to the server directly: count what it fetched too.
	sent := proxy.totalSent() + rep.BytesCopied - rep.BytesResumed
	refetched := sent - total
	t.Logf("%d kills; %d bytes sent for %d bytes of objects: %d fetched twice, at most %d allowed; last run resumed %d bytes",
		killed, sent, total, refetched, allowed, rep.BytesResumed)
	if refetched > allowed {
		t.Fatalf("%d bytes fetched more than once, more than one part (%d) per file in flight at a kill (%d allowed)", refetched, partSize, allowed)
	}
	if staged := e.stagedFiles(); len(staged) != 0 {
		t.Fatalf("staging files left: %v", staged)
	}
}

// TestResumeDiscardsAChangedObjectAndBadPieces: a partial download whose object was rewritten is
// thrown away, and a recorded piece whose bytes on disk no longer match its hashes (a crash that lost
// the data but not the record) is fetched again.
func TestResumeDiscardsAChangedObjectAndBadPieces(t *testing.T) {
	const partSize = 4 << 20
	e := newEnv(t)
	v1, v2 := testfiles.Random(20<<20, 1), testfiles.Random(20<<20, 2)
	e.put("big.bin", v1)
	proxy := newByteProxy(t, e.srv.Endpoint, 20<<20)
	interrupt := func() { // once 13 of the 20 MiB are sent: 3 pieces of 4 MiB complete, the 4th begun
		t.Helper()
		cmd := childSync(t, e, proxy.URL, partSize, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for from := proxy.totalSent(); proxy.totalSent()-from < 13<<20; {
			time.Sleep(5 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	resumeDir := filepath.Join(e.dir, filepath.FromSlash(manifest.ResumeDir))

	// A rewritten object: nothing of the old version is kept.
	interrupt()
	if recs, _ := filepath.Glob(filepath.Join(resumeDir, "*.rec")); len(recs) != 1 {
		t.Fatalf("no resume record after the kill: %v", recs)
	}
	e.put("big.bin", v2)
	rep := e.mustSync(func(o *cache.Options) { o.PartSize = partSize })
	if rep.BytesResumed != 0 {
		t.Fatalf("resumed %d bytes of an object that changed", rep.BytesResumed)
	}
	e.expectFile("big.bin", v2)

	// A piece whose bytes went bad after it was recorded.
	e.put("big.bin", v1)
	interrupt()
	parts, _ := filepath.Glob(filepath.Join(resumeDir, "*.part"))
	if len(parts) != 1 {
		t.Fatalf("no partial download after the kill: %v", parts)
	}
	f, err := os.OpenFile(parts[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("garbage"), 100); err != nil { // inside the first piece
		t.Fatal(err)
	}
	f.Close()
	rep = e.mustSync(func(o *cache.Options) { o.PartSize = partSize })
	e.expectFile("big.bin", v1)
	e.expectVerified()
	if rep.BytesResumed < 2*partSize || rep.BytesResumed > int64(len(v1))-partSize {
		t.Fatalf("resumed %d bytes: the good pieces should be kept and the bad one fetched again", rep.BytesResumed)
	}
	if !strings.HasPrefix(e.srv.Endpoint, "http://127.0.0.1:") {
		t.Fatal("test server is not local")
	}
}
