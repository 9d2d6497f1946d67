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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/test/testfiles"
)

// The crash test re-runs this test binary as a child that does one sync (TestMain dispatches on
// childEnv), and SIGKILLs it at random moments.
const childEnv = "PQCACHE_TEST_SYNC_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runSyncChild())
	}
	os.Exit(m.Run())
}

// runSyncChild syncs as `pqcache sync` would, configured from the environment (credentials through
// the standard AWS variables, as in a worker pod).
func runSyncChild() int {
	ctx := context.Background()
	partSize, _ := strconv.ParseInt(os.Getenv("CHILD_PART_SIZE"), 10, 64)
	parallel, _ := strconv.Atoi(os.Getenv("CHILD_PARALLEL"))
	if parallel == 0 {
		parallel = 4
	}
	store, err := s3store.New(ctx, s3store.Config{Bucket: os.Getenv("CHILD_BUCKET"), Endpoint: os.Getenv("CHILD_ENDPOINT"), PathStyle: true, Region: s3test.Region})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	prefix := os.Getenv("CHILD_PREFIX")
	_, err = cache.Sync(ctx, store, cache.Options{
		Dir: os.Getenv("CHILD_DIR"), Source: "s3://" + os.Getenv("CHILD_BUCKET") + "/" + prefix, Prefix: prefix,
		Prune: true, Parallelism: parallel, PartSize: partSize,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestSIGKILLAtRandomMomentsNeverTearsTheCache replaces every file, and adds and removes one, then
// kills the sync at a random moment; after each kill every published file must be a complete version
// of its object, and the manifest must describe exactly what is published.
func TestSIGKILLAtRandomMomentsNeverTearsTheCache(t *testing.T) {
	const iterations = 24
	e := newEnv(t)
	type version struct{ data [2][]byte }
	keys := map[string]*version{}
	for i := range 16 {
		size := 64<<10 + i*200<<10 // 64 KiB to ~3 MiB; those over 1 MiB download in parts
		keys[fmt.Sprintf("t%d/part-%02d.bin", i%3, i)] = &version{data: [2][]byte{testfiles.Random(size, uint64(i)), testfiles.Random(size+1, uint64(i+100))}}
	}
	for i := range 4 {
		keys[fmt.Sprintf("p/part-%d.parquet", i)] = &version{data: [2][]byte{testfiles.Parquet(t, 30_000, 10_000, uint64(i)), testfiles.Parquet(t, 30_000, 10_000, uint64(i+50))}}
	}
	// flip.bin exists only in odd versions, so deletes are interrupted too.
	flip := testfiles.Random(300<<10, 999)
	known := map[string]map[string]bool{"flip.bin": {hashOf(flip): true}}
	for k, v := range keys {
		known[k] = map[string]bool{hashOf(v.data[0]): true, hashOf(v.data[1]): true}
	}
	upload := func(v int) {
		for k, ver := range keys {
			e.put(k, ver.data[v])
		}
		if v == 1 {
			e.put("flip.bin", flip)
		} else if _, err := os.Stat(filepath.Join(e.srv.Root, "data", "tpch", "flip.bin")); err == nil {
			e.remove("flip.bin")
		}
	}
	upload(0)
	e.mustSync(nil)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := func() *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), self)
		cmd.Env = append(os.Environ(), childEnv+"=1",
			"AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey,
			"CHILD_BUCKET="+e.bucket, "CHILD_PREFIX="+e.prefix, "CHILD_DIR="+e.dir,
			"CHILD_ENDPOINT="+e.srv.Endpoint, "CHILD_PART_SIZE="+strconv.Itoa(1<<20))
		return cmd
	}

	// One uninterrupted child run tells how long a full replacement takes.
	upload(1)
	start := time.Now()
	if out, err := child().CombinedOutput(); err != nil {
		t.Fatalf("child sync: %v\n%s", err, out)
	}
	full := time.Since(start)
	t.Logf("a full replacement by a child process takes %s", full)

	rng := rand.New(rand.NewPCG(42, 42))
	killedMidway := 0
	for i := range iterations {
		upload(i % 2)
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(full)))
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(delay):
			_ = cmd.Process.Kill()
			<-exited
			killedMidway++
		}
		checkNoTornFiles(t, e.dir, known)
		if r, err := cache.Verify(e.dir); err != nil || !r.OK() {
			t.Fatalf("iteration %d (killed after %s): manifest does not describe the cache: %v %+v", i, delay, err, r)
		}
	}
	t.Logf("%d of %d runs were killed mid-sync", killedMidway, iterations)
	if killedMidway < iterations/2 {
		t.Fatalf("only %d of %d runs were interrupted: the test did not test crashes", killedMidway, iterations)
	}

	// The next run recovers and completes.
	upload(1)
	rep := e.mustSync(nil)
	for k, v := range keys {
		e.expectFile(k, v.data[1])
	}
	e.expectFile("flip.bin", flip)
	e.expectVerified()
	if staged := e.stagedFiles(); len(staged) != 0 {
		t.Fatalf("staging files left after a clean run: %v", staged)
	}
	t.Logf("final run: %d copied, %d unchanged", rep.FilesCopied, rep.FilesUnchanged)
}

// checkNoTornFiles asserts every published file is byte for byte one of the known versions of its key.
func checkNoTornFiles(t *testing.T, dir string, known map[string]map[string]bool) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == manifest.Dir {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		versions, ok := known[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("unexpected file %s", rel)
		} else if !versions[hashOf(data)] {
			t.Errorf("torn file %s: %d bytes match no version of the object", rel, len(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
