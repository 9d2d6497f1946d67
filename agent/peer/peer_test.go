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

package peer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/test/testfiles"
)

const (
	bucket   = "lake"
	prefix   = "sales/"
	partSize = 1 << 20
	dataset  = "default.sales"
)

var testKey = peer.Key{ID: "pqcache-peer", Secret: "peer-secret-for-tests"}

// lake is a bucket on a real S3-compatible server, a seed directory synced from it, and a peer
// serving the seed's generations.
type lake struct {
	t    *testing.T
	srv  *s3test.Server
	seed string
	peer *httptest.Server
	// wrap, if set, wraps the peer's handler (faults).
	wrap func(http.Handler) http.Handler
}

func newLake(t *testing.T) *lake {
	l := &lake{t: t, srv: s3test.Start(t), seed: filepath.Join(t.TempDir(), "seed")}
	l.srv.CreateBucket(t, bucket)
	server := &peer.Server{Auth: testKey, Roots: func(b string) (string, bool) { return l.seed, b == dataset }}
	l.peer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.wrap != nil {
			l.wrap(server).ServeHTTP(w, r)
			return
		}
		server.ServeHTTP(w, r)
	}))
	t.Cleanup(l.peer.Close)
	return l
}

// fill puts Parquet files, a large file fetched in ranges, a multipart upload fetched by parts, and
// a file with a full-object checksum.
func (l *lake) fill(seed uint64) {
	for i := range 4 {
		l.srv.PutObject(l.t, bucket, fmt.Sprintf("%sday=%d/part-0.parquet", prefix, i), testfiles.Parquet(l.t, 2000, 500, seed+uint64(i)))
	}
	l.srv.PutObject(l.t, bucket, prefix+"blob with space/ü.bin", testfiles.Random(3*partSize+17, seed))
	l.putMultipart("big/multi.bin", [][]byte{testfiles.Random(5<<20, seed+10), testfiles.Random(1<<20+3, seed+11)})
	// versitygw keeps a full-object CRC64NVME of every upload; without it, as in stores that predate
	// such checksums, the multipart ETag is the check and the object is fetched part by part.
	if err := unix.Removexattr(filepath.Join(l.srv.Root, bucket, prefix+"big/multi.bin"), "user.checksums"); err != nil {
		l.t.Fatal(err)
	}
	_, err := l.srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "sum.parquet"),
		Body: bytes.NewReader(testfiles.Parquet(l.t, 100, 100, seed+20)), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme})
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *lake) putMultipart(key string, parts [][]byte) {
	l.t.Helper()
	c, ctx, k := l.srv.Client(), context.Background(), aws.String(prefix+key)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: k})
	if err != nil {
		l.t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, p := range parts {
		n := aws.Int32(int32(i + 1))
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: k, UploadId: up.UploadId, PartNumber: n, Body: bytes.NewReader(p)})
		if err != nil {
			l.t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: n, ETag: out.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: k, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		l.t.Fatal(err)
	}
}

// bucketStore is the bucket as the sync engine reaches it, with fresh request counters.
func (l *lake) bucketStore() *s3store.Store {
	l.t.Helper()
	st, err := s3store.New(context.Background(), s3store.Config{Bucket: bucket, Client: l.srv.Client()})
	if err != nil {
		l.t.Fatal(err)
	}
	return st
}

func options(dir string) cache.Options {
	return cache.Options{Dir: dir, Source: "s3://" + bucket + "/" + prefix, Prefix: prefix, Prune: true, Parallelism: 4, PartSize: partSize,
		Generations: &generations.Policy{Keep: 2, Index: true}}
}

// syncSeed syncs the seed from the bucket and returns the generation it published.
func (l *lake) syncSeed() int64 {
	l.t.Helper()
	rep, err := cache.Sync(context.Background(), l.bucketStore(), options(l.seed))
	if err != nil {
		l.t.Fatalf("seed sync: %v", err)
	}
	return rep.Manifest.Generation
}

// follow syncs dir from the peer's generation g, falling back to the bucket; it returns the report,
// the bucket's request counters, and the error.
func (l *lake) follow(dir string, g int64) (*wire.SyncReport, *s3store.Requests, error) {
	l.t.Helper()
	from, err := peer.NewStore(context.Background(), l.peer.URL, testKey, dataset)
	if err != nil {
		l.t.Fatal(err)
	}
	bkt := l.bucketStore()
	opts := options(dir)
	opts.Follow = &cache.Follow{Peer: cache.Source{Store: from, Prefix: peer.Prefix(g)}, Generation: g}
	opts.Requests = from.Requests()
	rep, err := cache.Sync(context.Background(), bkt, opts)
	return rep, bkt.Requests(), err
}

// TestFollowerCopiesTheSeedsGeneration: a follower filled from a peer has the seed's manifest,
// entry for entry, under the seed's generation number, the same bytes, and read nothing from the
// bucket; an unchanged follow costs one listing of the peer and no GET.
func TestFollowerCopiesTheSeedsGeneration(t *testing.T) {
	l := newLake(t)
	l.fill(1)
	g := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	rep, bkt, err := l.follow(dir, g)
	if err != nil {
		t.Fatalf("follow: %v (%+v)", err, rep.Failed)
	}
	if n := bkt.Get.Load() + bkt.Head.Load() + bkt.List.Load(); n != 0 {
		t.Errorf("the follower sent %d requests to the bucket, want 0", n)
	}
	if rep.Manifest.Generation != g || rep.Generations == nil || rep.Generations.Current != g {
		t.Errorf("follower generation %d, current %+v; want the seed's %d", rep.Manifest.Generation, rep.Generations, g)
	}
	if rep.FilesCopied != 7 || rep.FilesFromFallback != 0 {
		t.Errorf("copied %d (from fallback %d), want 7 from the peer", rep.FilesCopied, rep.FilesFromFallback)
	}
	sameManifest(t, l.seed, dir)
	sameTree(t, l.seed, dir, g)
	verified := entries(t, dir)
	if v := verified["big/multi.bin"]; v.Verified != "multipart-etag" || len(v.Parts) != 2 {
		t.Errorf("multipart object on the follower: verified %q, parts %v", v.Verified, v.Parts)
	}
	if v := verified["sum.parquet"]; !strings.HasPrefix(v.Checksum, "CRC64NVME:") {
		t.Errorf("checksummed object on the follower: checksum %q", v.Checksum)
	}

	again, _, err := l.follow(dir, g)
	if err != nil || again.FilesCopied != 0 || again.Requests.Get != 0 || again.Requests.List != 1 {
		t.Errorf("unchanged follow: %v, copied %d, requests %+v; want 1 LIST and no GET", err, again.FilesCopied, again.Requests)
	}
}

// TestCorruptByteOnThePeerComesFromTheBucket: a byte changed on the seed's disk (the peer serves it
// as it is) fails the follower's check against the bucket's ETag, and that file alone is fetched
// from the bucket; the follower ends with the bucket's bytes and the seed's manifest.
func TestCorruptByteOnThePeerComesFromTheBucket(t *testing.T) {
	l := newLake(t)
	l.fill(2)
	g := l.syncSeed()
	flipByte(t, filepath.Join(l.seed, "day=2", "part-0.parquet"), 100)
	dir := filepath.Join(t.TempDir(), "follower")
	rep, bkt, err := l.follow(dir, g)
	if err != nil {
		t.Fatalf("follow: %v (%+v)", err, rep.Failed)
	}
	if rep.FilesFromFallback != 1 || bkt.Get.Load() < 1 {
		t.Errorf("files from the fallback %d, bucket GETs %d; want the corrupt file from the bucket", rep.FilesFromFallback, bkt.Get.Load())
	}
	sameManifest(t, l.seed, dir)
	want := getObject(t, l.srv, prefix+"day=2/part-0.parquet")
	if got, err := os.ReadFile(filepath.Join(dir, "day=2", "part-0.parquet")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the follower's copy of the corrupted file is not the bucket's (%v)", err)
	}
}

// TestPeerKilledMidTransfer: a peer that drops the connection halfway through a file leaves the
// follower to fetch that file from the bucket; the follower's copy is whole.
func TestPeerKilledMidTransfer(t *testing.T) {
	l := newLake(t)
	l.fill(3)
	g := l.syncSeed()
	l.wrap = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/big/") {
				next.ServeHTTP(&dying{ResponseWriter: w, left: 64 << 10}, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	dir := filepath.Join(t.TempDir(), "follower")
	rep, _, err := l.follow(dir, g)
	if err != nil {
		t.Fatalf("follow: %v (%+v)", err, rep.Failed)
	}
	if rep.FilesFromFallback != 1 {
		t.Errorf("files from the fallback: %d, want the one the peer dropped", rep.FilesFromFallback)
	}
	sameManifest(t, l.seed, dir)
	sameTree(t, l.seed, dir, g)
}

// TestFollowerNeverPublishesAPartialGeneration: when a file of the generation can come neither from
// the peer (corrupt) nor from the bucket (changed since), the follower keeps its last good
// generation current and reports the file; the next generation gets through.
func TestFollowerNeverPublishesAPartialGeneration(t *testing.T) {
	l := newLake(t)
	l.fill(4)
	g1 := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if rep, _, err := l.follow(dir, g1); err != nil {
		t.Fatalf("follow %d: %v (%+v)", g1, err, rep.Failed)
	}
	l.srv.PutObject(t, bucket, prefix+"day=0/part-0.parquet", testfiles.Parquet(t, 2000, 500, 40))
	l.srv.PutObject(t, bucket, prefix+"day=1/part-0.parquet", testfiles.Parquet(t, 2000, 500, 41))
	g2 := l.syncSeed()
	flipByte(t, filepath.Join(l.seed, "day=0", "part-0.parquet"), 100)
	l.srv.PutObject(t, bucket, prefix+"day=0/part-0.parquet", testfiles.Parquet(t, 2000, 500, 42)) // not g2's any more

	rep, _, err := l.follow(dir, g2)
	if !errors.Is(err, cache.ErrFilesFailed) || rep.FilesFailed != 1 {
		t.Fatalf("follow %d: %v, failed %d; want the one file that is nowhere", g2, err, rep.FilesFailed)
	}
	if infos, cur, err := generations.List(dir); err != nil || cur != g1 {
		t.Fatalf("current generation %d (%v, %+v), want %d: a partial generation was published", cur, err, infos, g1)
	}
	g3 := l.syncSeed()
	if rep, _, err := l.follow(dir, g3); err != nil {
		t.Fatalf("follow %d: %v (%+v)", g3, err, rep.Failed)
	}
	sameManifest(t, l.seed, dir)
	sameTree(t, l.seed, dir, g3)
}

// TestGenerationGoneFailsTheListing: a generation the seed no longer keeps is not an empty bucket:
// the follow fails and deletes nothing.
func TestGenerationGoneFailsTheListing(t *testing.T) {
	l := newLake(t)
	l.fill(5)
	g := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if rep, _, err := l.follow(dir, g); err != nil {
		t.Fatalf("follow: %v (%+v)", err, rep.Failed)
	}
	rep, _, err := l.follow(dir, g+5)
	if err == nil || !strings.Contains(err.Error(), "NoSuchGeneration") {
		t.Fatalf("following a generation the seed never published: %v, want NoSuchGeneration", err)
	}
	if rep.FilesDeleted != 0 {
		t.Errorf("deleted %d files", rep.FilesDeleted)
	}
	sameTree(t, l.seed, dir, g)
}

func sameManifest(t *testing.T, seed, follower string) {
	t.Helper()
	if d := cmp.Diff(entries(t, seed), entries(t, follower)); d != "" {
		t.Errorf("follower manifest differs from the seed's (-seed +follower):\n%s", d)
	}
}

func entries(t *testing.T, dir string) map[string]manifest.Entry {
	t.Helper()
	m, err := manifest.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out := map[string]manifest.Entry{}
	if err := m.Scan("", func(e manifest.Entry) error { out[e.Key] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree checks that generation g holds the same files with the same bytes on both sides.
func sameTree(t *testing.T, seed, follower string, g int64) {
	t.Helper()
	read := func(root string) map[string]string {
		out := map[string]string{}
		tree := filepath.Join(root, filepath.FromSlash(generations.Dir), fmt.Sprint(g))
		err := filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(tree, p)
			out[rel] = fmt.Sprintf("%x", b[:min(len(b), 64)]) + fmt.Sprint(len(b))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := read(seed), read(follower)
	if len(want) == 0 {
		t.Fatal("the seed's tree is empty")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("generation %d differs (-seed +follower):\n%s", g, d)
	}
}

// dying passes left bytes of the body, then aborts the connection as a killed peer would.
type dying struct {
	http.ResponseWriter
	left int
}

func (d *dying) Write(b []byte) (int, error) {
	if len(b) > d.left {
		d.ResponseWriter.Write(b[:d.left])
		d.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	d.left -= len(b)
	return d.ResponseWriter.Write(b)
}

func getObject(t *testing.T, srv *s3test.Server, key string) []byte {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// flipByte changes one bit of the byte at at, in place: the inode the generation trees share.
func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
