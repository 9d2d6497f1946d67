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
	"io"
	"slices"
	"testing"

	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// ignoresParts answers a part read (GET ?partNumber=N) with the whole object, 200, no Content-Range
// and no part count, as moto's server and other S3-compatible stores do; every other request goes to
// the store (a real versitygw). getInfo is what s3store.Store reports for such an answer.
type ignoresParts struct {
	cache.Store
	partReads int
}

func (s *ignoresParts) Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error) {
	if r.PartNumber == 0 {
		return s.Store.Get(ctx, key, etag, r)
	}
	s.partReads++
	body, info, err := s.Store.Get(ctx, key, etag, s3store.Whole)
	info.PartsCount, info.Start = 0, 0
	return body, info, err
}

// A multipart object whose ETag is the MD5 of its parts' MD5s, from a store that ignores part reads:
// the sync falls back to fetching it without its parts, checks it by size, counts it as unverified
// and says why; later syncs of the source remember and do not ask for a part again. With --verify
// size no part is ever asked for.
func TestAStoreThatIgnoresPartReads(t *testing.T) {
	const part = 5 << 20
	parts := [][]byte{testfiles.Random(part, 1), testfiles.Random(part, 2), testfiles.Random(1234, 3)}
	whole := bytes.Join(parts, nil)
	e := newEnv(t)
	e.putMultipart("obj.bin", parts, "", "")
	e.forgetChecksums("obj.bin") // a multipart ETag and nothing else: only the parts could check it
	sync := func(tweak func(*cache.Options)) (*ignoresParts, error) {
		st, reqs := e.store()
		ip := &ignoresParts{Store: st}
		opts := e.options(reqs)
		opts.PartSize = 16 << 20
		if tweak != nil {
			tweak(&opts)
		}
		rep, err := cache.Sync(context.Background(), ip, opts)
		if err == nil && (rep.FilesUnverified != 1 || len(rep.Warnings) != 1) {
			t.Errorf("report: %d unverified, warnings %q; want 1 and why", rep.FilesUnverified, rep.Warnings)
		}
		return ip, err
	}
	ip, err := sync(nil)
	if err != nil {
		t.Fatalf("the sync failed instead of falling back: %v", err)
	}
	e.expectFile("obj.bin", whole)
	if ip.partReads < 1 || ip.partReads > len(parts) {
		t.Errorf("%d part reads, want the first ones, in parallel, that found out", ip.partReads)
	}

	e.putMultipart("obj.bin", [][]byte{parts[1], parts[0], parts[2]}, "", "")
	e.forgetChecksums("obj.bin")
	if ip, err = sync(nil); err != nil || ip.partReads != 0 {
		t.Fatalf("the next sync: %v, %d part reads; want none: the store's habit is kept", err, ip.partReads)
	}
	e.expectFile("obj.bin", slices.Concat(parts[1], parts[0], parts[2]))

	e2 := newEnv(t)
	e2.putMultipart("obj.bin", parts, "", "")
	e2.forgetChecksums("obj.bin")
	st, reqs := e2.store()
	ip2 := &ignoresParts{Store: st}
	opts := e2.options(reqs)
	opts.Verify = cache.VerifySize
	if rep, err := cache.Sync(context.Background(), ip2, opts); err != nil || ip2.partReads != 0 || rep.FilesUnverified != 0 {
		t.Fatalf("--verify size: %v, %d part reads, %d unverified; want no part read", err, ip2.partReads, rep.FilesUnverified)
	}
	e2.expectFile("obj.bin", whole)
}
