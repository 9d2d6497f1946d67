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
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/test/s3test"
	"github.com/pqcache/pqcache/worker"
)

// TestSyncFromPeerCommandLine: `sync --serve-peers` indexes the seed's generation, and `sync --peer`
// copies it from a peer endpoint under the same generation and digest, with no GET to the bucket;
// incomplete peer flags are refused with what is missing.
func TestSyncFromPeerCommandLine(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "sales/a.csv", []byte("a,b\n1,2\n"))
	srv.PutObject(t, "lake", "sales/day=1/b.csv", []byte("a,b\n3,4\n"))
	useTestCredentials(t)
	t.Setenv(worker.EnvPeerKeyID, "peer-id")
	t.Setenv(worker.EnvPeerSecret, "peer-secret")
	seed, follower := filepath.Join(t.TempDir(), "seed"), filepath.Join(t.TempDir(), "follower")
	common := []string{"--endpoint", srv.Endpoint, "--path-style", "--progress", "none", "--json"}

	out, err := run(t, append([]string{"sync", "s3://lake/sales/", seed, "--serve-peers"}, common...)...)
	if err != nil {
		t.Fatalf("seed sync: %v\n%s", err, out)
	}
	var seedRep wire.SyncReport
	if err := json.Unmarshal([]byte(out), &seedRep); err != nil {
		t.Fatal(err)
	}
	roots, err := peer.RootsOf([]string{"sales=" + seed})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(&peer.Server{Auth: peer.Key{ID: "peer-id", Secret: "peer-secret"}, Roots: roots})
	defer p.Close()

	g := seedRep.Manifest.Generation
	out, err = run(t, append([]string{"sync", "s3://lake/sales/", follower, "--peer", p.URL + "/sales", "--peer-generation", "1"}, common...)...)
	if err != nil {
		t.Fatalf("follower sync: %v\n%s", err, out)
	}
	var rep wire.SyncReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if g != 1 || rep.Manifest.Generation != g || rep.Manifest.Digest != seedRep.Manifest.Digest || rep.FilesCopied != 2 || rep.FilesFromFallback != 0 {
		t.Errorf("follower: generation %d digest %s copied %d (fallback %d); seed: generation %d digest %s", rep.Manifest.Generation,
			rep.Manifest.Digest, rep.FilesCopied, rep.FilesFromFallback, g, seedRep.Manifest.Digest)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"sync", "s3://lake/sales/", follower, "--peer", p.URL + "/sales"}, "--peer-generation"},
		{[]string{"sync", "s3://lake/sales/", follower, "--peer", p.URL, "--peer-generation", "1"}, "http://HOST:PORT/NAME"},
		{[]string{"sync", "s3://lake/sales/", follower, "--peer", p.URL + "/sales", "--peer-generation", "1", "--generations", "0"}, "--generations"},
		{[]string{"peer", "serve", "sales"}, "NAME=DIR"},
	} {
		args := bad.args
		if args[0] == "sync" {
			args = append(args, "--endpoint", srv.Endpoint, "--path-style", "--progress", "none")
		}
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error naming %s", bad.args, err, bad.want)
		}
	}
	t.Setenv(worker.EnvPeerSecret, "")
	if _, err := run(t, append([]string{"sync", "s3://lake/sales/", follower, "--peer", p.URL + "/sales", "--peer-generation", "1"}, common...)...); err == nil || !strings.Contains(err.Error(), worker.EnvPeerSecret) {
		t.Errorf("a follower without the peer key: %v", err)
	}
}
