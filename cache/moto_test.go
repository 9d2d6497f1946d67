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
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/mototest"
	"github.com/pqcache/pqcache/test/testfiles"
)

// motoLake is a bucket on moto's server (AWS's own behaviours: its ETags, its encoding of keys, its
// answer to a part read) and a cache directory.
type motoLake struct {
	t   *testing.T
	srv *mototest.Server
	dir string
}

const motoBucket, motoPrefix = "lake", "tpch/"

func (m *motoLake) put(key string, body []byte, tweak func(*s3.PutObjectInput)) {
	m.srv.PutObject(m.t, motoBucket, motoPrefix+key, body, tweak)
}

// sync runs one sync with a fresh store, so that the report's request counts are this sync's own.
func (m *motoLake) sync() *wire.SyncReport {
	m.t.Helper()
	st, err := s3store.New(context.Background(), s3store.Config{Bucket: motoBucket, Client: m.srv.S3()})
	if err != nil {
		m.t.Fatal(err)
	}
	rep, err := cache.Sync(context.Background(), st, cache.Options{Dir: m.dir, Source: "s3://" + motoBucket + "/" + motoPrefix,
		Prefix: motoPrefix, Prune: true, Parallelism: 4, PartSize: 16 << 20, Requests: st.Requests()})
	if err != nil {
		m.t.Fatalf("sync: %v\nreport: %+v", err, rep)
	}
	return rep
}

func (m *motoLake) expect(key string, want []byte) {
	m.t.Helper()
	got, err := os.ReadFile(filepath.Join(m.dir, key))
	if err != nil || !bytes.Equal(got, want) {
		m.t.Fatalf("cached %s: %d bytes (%v), want %d bytes as in the bucket", key, len(got), err, len(want))
	}
}

// The sync against moto's server, of random bytes in .bin files (no Parquet check applies): keys that
// need encoding, an SSE-KMS object, and a multipart object with no checksum, which moto answers part
// reads for with the whole object. The first sync copies all of them, checks the multipart one by its
// size and says so; an unchanged bucket then costs one listing and no GET; a change and a delete cost
// one GET and no part read, and the deleted file goes.
func TestSyncAgainstMoto(t *testing.T) {
	m := &motoLake{t: t, srv: mototest.Start(t), dir: filepath.Join(t.TempDir(), "cache")}
	m.srv.CreateBucket(t, motoBucket)
	plain, spaced, sealed := testfiles.Random(100<<10, 1), testfiles.Random(3000, 2), testfiles.Random(4000, 3)
	parts := [][]byte{testfiles.Random(5<<20, 4), testfiles.Random(5<<20, 5), testfiles.Random(777, 6)}
	m.put("lineitem/part-0.bin", plain, nil)
	m.put("region/r=a b+c/part 0+1.bin", spaced, nil)
	m.put("orders/sealed.bin", sealed, func(in *s3.PutObjectInput) { in.ServerSideEncryption = s3types.ServerSideEncryptionAwsKms })
	m.srv.PutMultipart(t, motoBucket, motoPrefix+"nation/big.bin", parts)

	rep := m.sync()
	if rep.FilesCopied != 4 || rep.FilesUnverified != 1 || len(rep.Warnings) != 1 {
		t.Fatalf("first sync: %d copied, %d unverified, warnings %q; want 4, 1 (the multipart object) and why",
			rep.FilesCopied, rep.FilesUnverified, rep.Warnings)
	}
	m.expect("lineitem/part-0.bin", plain)
	m.expect("region/r=a b+c/part 0+1.bin", spaced)
	m.expect("orders/sealed.bin", sealed)
	m.expect("nation/big.bin", bytes.Join(parts, nil))
	if v, err := cache.Verify(m.dir); err != nil || !v.OK() {
		t.Fatalf("verify after the first sync: %v %+v", err, v)
	}

	if rep = m.sync(); rep.FilesUnchanged != 4 || rep.Requests.List != 1 || rep.Requests.Get != 0 || rep.Requests.Head != 0 {
		t.Fatalf("unchanged bucket: %d unchanged, requests %+v; want 4, one listing and nothing else", rep.FilesUnchanged, rep.Requests)
	}

	changed := testfiles.Random(2500, 7)
	m.put("region/r=a b+c/part 0+1.bin", changed, nil)
	m.srv.DeleteObject(t, motoBucket, motoPrefix+"lineitem/part-0.bin")
	rep = m.sync()
	if rep.FilesCopied != 1 || rep.FilesDeleted != 1 || rep.Requests.Get != 1 {
		t.Fatalf("one change, one delete: %d copied, %d deleted, requests %+v; want 1, 1, one GET", rep.FilesCopied, rep.FilesDeleted, rep.Requests)
	}
	m.expect("region/r=a b+c/part 0+1.bin", changed)
	if _, err := os.Stat(filepath.Join(m.dir, "lineitem/part-0.bin")); !os.IsNotExist(err) {
		t.Fatalf("the deleted object's file is still cached: %v", err)
	}
}
