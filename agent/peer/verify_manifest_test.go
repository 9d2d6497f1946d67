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
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/test/testfiles"
)

// followVerified syncs dir from the peer's generation g as a node agent does: the peer's manifest
// is taken only with digest want, and the peer is read through it.
func (l *lake) followVerified(dir string, g int64, want string) (*wire.SyncReport, *peer.VerifiedStore, error) {
	l.t.Helper()
	from, err := peer.NewStore(context.Background(), l.peer.URL, testKey, dataset)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	m, err := peer.FetchManifest(context.Background(), from, g, want, dir)
	if err != nil {
		return nil, nil, err
	}
	defer m.Close()
	v := m.VerifiedStore(from)
	opts := options(dir)
	opts.Follow = &cache.Follow{Peer: cache.Source{Store: v, Prefix: peer.Prefix(g)}, Generation: g}
	opts.Requests = from.Requests()
	rep, err := cache.Sync(context.Background(), l.bucketStore(), opts)
	return rep, v, err
}

func (l *lake) digest(g int64) string {
	l.t.Helper()
	d, err := peer.ManifestDigest(l.seed, g)
	if err != nil {
		l.t.Fatal(err)
	}
	return d
}

func current(t *testing.T, dir string) int64 {
	t.Helper()
	_, g, err := generations.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAVerifiedFollowerCopiesTheSeedsGeneration: checked against the seed's manifest, a genuine peer
// serves the whole generation (parts, ranges, checksums) with nothing refused and nothing from the
// bucket, and the follower's own copy has the seed's digest.
func TestAVerifiedFollowerCopiesTheSeedsGeneration(t *testing.T) {
	l := newLake(t)
	l.fill(1)
	g := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	rep, v, err := l.followVerified(dir, g, l.digest(g))
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	if rep.FilesCopied != 7 || rep.FilesFromFallback != 0 || v.Refused() != 0 {
		t.Errorf("copied %d (from the bucket %d), refused %d answers; want 7 from the peer, none refused", rep.FilesCopied, rep.FilesFromFallback, v.Refused())
	}
	sameManifest(t, l.seed, dir)
	if d, err := peer.ManifestDigest(dir, g); err != nil || d != l.digest(g) {
		t.Errorf("the follower's generation %d has digest %s (%v), the seed's %s", g, d, err, l.digest(g))
	}
}

// TestAForgingPeerIsRefused: a peer that serves, as generation g, a generation the seed never
// published (synced from a bucket that holds a file the seed's generation does not) is refused at
// its manifest: the follower copies nothing and keeps its last good generation. The same peer,
// followed without the seed's manifest, would have had the forged file published.
func TestAForgingPeerIsRefused(t *testing.T) {
	l := newLake(t)
	l.fill(2)
	g1 := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if _, _, err := l.followVerified(dir, g1, l.digest(g1)); err != nil {
		t.Fatalf("first follow: %v", err)
	}
	l.srv.PutObject(t, bucket, prefix+"day=9/part-0.parquet", testfiles.Parquet(t, 100, 100, 99))
	g2 := l.syncSeed()
	want := l.digest(g2)

	// The forger: a copy numbered g2, of a bucket that also held a file the seed never saw.
	l.srv.PutObject(t, bucket, prefix+"forged.parquet", testfiles.Parquet(t, 100, 100, 66))
	forger := filepath.Join(t.TempDir(), "forger")
	fopts := options(forger)
	fopts.GenerationAtLeast = g2 - 1
	if rep, err := cache.Sync(context.Background(), l.bucketStore(), fopts); err != nil || rep.Manifest.Generation != g2 {
		t.Fatalf("forger sync: generation %d, %v; want %d", rep.Manifest.Generation, err, g2)
	}
	l.seed = forger // the peer now serves the forger's copy

	if _, _, err := l.followVerified(dir, g2, want); !errors.Is(err, peer.ErrManifestMismatch) {
		t.Fatalf("following the forger: %v, want %v", err, peer.ErrManifestMismatch)
	}
	if g := current(t, dir); g != g1 {
		t.Errorf("the follower publishes generation %d after refusing the forger, want its last good %d", g, g1)
	}
	if _, err := os.Stat(filepath.Join(dir, "forged.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the forged file is on the follower: %v", err)
	}

	// Without the seed's manifest, the follower takes what the forger says (the attack this stops).
	blind := filepath.Join(t.TempDir(), "blind")
	if _, _, err := l.follow(blind, g2); err != nil {
		t.Fatalf("unverified follow: %v", err)
	}
	if _, err := os.Stat(filepath.Join(blind, "forged.parquet")); err != nil {
		t.Errorf("an unverified follower did not take the forged file (%v): this test no longer shows the attack", err)
	}
}

// tamper makes the lake's peer answer requests that match with a body that edit changed.
func (l *lake) tamper(match func(*http.Request) bool, edit func(r *http.Request, h http.Header, body []byte) []byte) {
	l.wrap = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !match(r) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := edit(r, rec.Header(), rec.Body.Bytes())
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	}
}

var firstETag = regexp.MustCompile(`<ETag>[^<]*</ETag>`)

// TestAForgedListingIsRefused: a peer that serves the seed's manifest but lists an object with
// another ETag fails the follower's sync with ErrManifestMismatch; the follower keeps its generation.
func TestAForgedListingIsRefused(t *testing.T) {
	l := newLake(t)
	l.fill(3)
	g1 := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if _, _, err := l.followVerified(dir, g1, l.digest(g1)); err != nil {
		t.Fatalf("first follow: %v", err)
	}
	l.srv.PutObject(t, bucket, prefix+"day=0/part-0.parquet", testfiles.Parquet(t, 2000, 500, 33))
	g2 := l.syncSeed()
	l.tamper(func(r *http.Request) bool { return r.URL.Query().Get("list-type") == "2" },
		func(_ *http.Request, _ http.Header, body []byte) []byte {
			return firstETag.ReplaceAll(body, []byte("<ETag>&#34;0123456789abcdef0123456789abcdef&#34;</ETag>"))
		})
	rep, v, err := l.followVerified(dir, g2, l.digest(g2))
	if !errors.Is(err, peer.ErrManifestMismatch) {
		t.Fatalf("following a peer with a forged listing: %v, want %v", err, peer.ErrManifestMismatch)
	}
	if v.Refused() == 0 || rep.FilesCopied != 0 {
		t.Errorf("refused %d answers, copied %d files; want the listing refused and nothing copied", v.Refused(), rep.FilesCopied)
	}
	if g := current(t, dir); g != g1 {
		t.Errorf("the follower publishes generation %d, want its last good %d", g, g1)
	}
}

// TestForgedBytesWithTheirOwnChecksumComeFromTheBucket: a peer that serves other bytes of the same
// size for a file, with the CRC64NVME of those bytes instead of the seed's, has that answer refused;
// the file comes from the bucket, and the follower publishes the seed's generation with the bucket's
// bytes. Followed without the seed's manifest, the same peer has its bytes taken.
func TestForgedBytesWithTheirOwnChecksumComeFromTheBucket(t *testing.T) {
	l := newLake(t)
	l.fill(4)
	g := l.syncSeed()
	orig := getObject(t, l.srv, prefix+"sum.parquet")
	forged := bytes.Clone(orig)
	forged[100] ^= 0x20 // inside a data page: the Parquet framing and footer still check
	crc := integrity.NewCRC64NVME()
	_, _ = crc.Write(forged)
	l.tamper(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/sum.parquet")
	},
		func(_ *http.Request, h http.Header, _ []byte) []byte {
			h.Set("X-Amz-Checksum-Crc64nvme", base64.StdEncoding.EncodeToString(crc.Sum(nil)))
			return forged
		})
	dir := filepath.Join(t.TempDir(), "follower")
	rep, v, err := l.followVerified(dir, g, l.digest(g))
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	if v.Refused() == 0 || rep.FilesFromFallback != 1 {
		t.Errorf("refused %d answers, %d files from the bucket; want the forged answer refused and its file from the bucket", v.Refused(), rep.FilesFromFallback)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "sum.parquet")); err != nil || !bytes.Equal(got, orig) {
		t.Errorf("the follower's sum.parquet is not the bucket's (%v)", err)
	}
	if current(t, dir) != g {
		t.Errorf("the follower publishes %d, want %d", current(t, dir), g)
	}

	blind := filepath.Join(t.TempDir(), "blind")
	if _, _, err := l.follow(blind, g); err != nil {
		t.Fatalf("unverified follow: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(blind, "sum.parquet")); !bytes.Equal(got, forged) {
		t.Errorf("an unverified follower did not take the forged bytes: this test no longer shows the attack")
	}
}

// TestAManifestWithoutTheSeedsDigestIsRefused: no digest from the seed, or a manifest edited in
// transit, is refused before anything is copied.
func TestAManifestWithoutTheSeedsDigestIsRefused(t *testing.T) {
	l := newLake(t)
	l.fill(5)
	g := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if _, _, err := l.followVerified(dir, g, ""); !errors.Is(err, peer.ErrManifestMismatch) {
		t.Errorf("no digest from the seed: %v, want %v", err, peer.ErrManifestMismatch)
	}
	l.tamper(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/"+peer.ManifestKey(g)) },
		func(_ *http.Request, _ http.Header, body []byte) []byte {
			return bytes.Replace(body, []byte(`"size":`), []byte(`"size":1`), 1)
		})
	if _, _, err := l.followVerified(dir, g, l.digest(g)); !errors.Is(err, peer.ErrManifestMismatch) {
		t.Errorf("a manifest edited in transit: %v, want %v", err, peer.ErrManifestMismatch)
	}
	if _, err := os.Stat(filepath.Join(dir, "sum.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was copied from a refused peer: %v", err)
	}
}

var firstContents = regexp.MustCompile(`<Contents>.*?</Contents>`)

// TestAPeerThatHidesAFileIsRefused: a peer that serves the seed's manifest but leaves a file out of
// its listing (which would have the follower delete it) fails the sync; the follower keeps its
// generation and the file.
func TestAPeerThatHidesAFileIsRefused(t *testing.T) {
	l := newLake(t)
	l.fill(6)
	g1 := l.syncSeed()
	dir := filepath.Join(t.TempDir(), "follower")
	if _, _, err := l.followVerified(dir, g1, l.digest(g1)); err != nil {
		t.Fatalf("first follow: %v", err)
	}
	l.srv.PutObject(t, bucket, prefix+"day=8/part-0.parquet", testfiles.Parquet(t, 100, 100, 88))
	g2 := l.syncSeed()
	l.tamper(func(r *http.Request) bool { return r.URL.Query().Get("list-type") == "2" },
		func(_ *http.Request, _ http.Header, body []byte) []byte {
			if loc := firstContents.FindIndex(body); loc != nil {
				return append(body[:loc[0]:loc[0]], body[loc[1]:]...)
			}
			return body
		})
	_, v, err := l.followVerified(dir, g2, l.digest(g2))
	if !errors.Is(err, peer.ErrManifestMismatch) || v.Refused() == 0 {
		t.Fatalf("following a peer that hides a file: %v, want %v", err, peer.ErrManifestMismatch)
	}
	if g := current(t, dir); g != g1 {
		t.Errorf("the follower publishes generation %d, want its last good %d", g, g1)
	}
	if _, err := os.Stat(filepath.Join(dir, ".pqcache", "generations", strconv.FormatInt(g1, 10), "blob with space", "ü.bin")); err != nil {
		t.Errorf("the follower's last good generation lost a file: %v", err)
	}
}
