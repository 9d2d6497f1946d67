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

package s3store

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestWhatVersityGWVouchesFor pins down what the sync engine relies on from versitygw v1.8.0, through
// both GET paths (the lean one and the SDK's): listings carry the checksum algorithm and type; a
// plain PUT and a multipart upload without checksums get a full-object CRC64NVME; a HEAD returns the
// value; a whole-object GET returns it with the bytes, a ranged or part GET does not; a part GET says
// where the part lies (Content-Range) and how many parts there are.
func TestWhatVersityGWVouchesFor(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	ctx := context.Background()
	c := srv.Client()
	small := bytes.Repeat([]byte("x"), 1000)
	srv.PutObject(t, "bkt", "plain", small)
	parts := [][]byte{bytes.Repeat([]byte("a"), 5<<20), bytes.Repeat([]byte("b"), 5<<20), []byte("tail")}
	for _, mp := range []struct {
		key  string
		algo types.ChecksumAlgorithm
		typ  types.ChecksumType
	}{{"mp-default", "", ""}, {"mp-composite", types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite}} {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(mp.key), ChecksumAlgorithm: mp.algo, ChecksumType: mp.typ}
		up, err := c.CreateMultipartUpload(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var done []types.CompletedPart
		for i, p := range parts {
			out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String(mp.key), UploadId: up.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ChecksumAlgorithm: mp.algo})
			if err != nil {
				t.Fatal(err)
			}
			done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
		}
		if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(mp.key),
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
			t.Fatal(err)
		}
	}

	st, err := New(ctx, Config{Bucket: "bkt", Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if st.fast == nil {
		t.Fatal("the lean GET path is off for a plain endpoint")
	}
	listed := map[string]plan.Object{}
	if err := st.List(ctx, "", "", func(page []plan.Object) error {
		for _, o := range page {
			listed[o.Key] = o
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][2]string{
		"plain": {"CRC64NVME", "FULL_OBJECT"}, "mp-default": {"CRC64NVME", "FULL_OBJECT"}, "mp-composite": {"CRC32", "COMPOSITE"},
	} {
		if o := listed[key]; o.ChecksumAlgorithm != want[0] || o.ChecksumType != want[1] {
			t.Errorf("%s listed with checksum %s/%s, want %s/%s", key, o.ChecksumAlgorithm, o.ChecksumType, want[0], want[1])
		}
	}
	if n := integrity.MultipartParts(listed["mp-default"].ETag); n != 3 {
		t.Errorf("multipart ETag %s: %d parts, want 3", listed["mp-default"].ETag, n)
	}

	sdk := &Store{client: st.client, bucket: st.bucket, requests: st.requests} // the SDK's GetObject and listing
	var viaSDK []plan.Object
	if err := sdk.List(ctx, "", "", func(page []plan.Object) error { viaSDK = append(viaSDK, page...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(viaSDK) != len(listed) {
		t.Fatalf("the SDK lists %d objects, the lean listing %d", len(viaSDK), len(listed))
	}
	for _, o := range viaSDK {
		if listed[o.Key] != o {
			t.Errorf("the SDK lists %+v, the lean listing %+v", o, listed[o.Key])
		}
	}
	for name, s := range map[string]*Store{"lean": st, "sdk": sdk} {
		get := func(key string, r Range) (GetInfo, []byte) {
			t.Helper()
			body, info, err := s.Get(ctx, key, listed[key].ETag, r)
			if err != nil {
				t.Fatalf("%s: GET %s %+v: %v", name, key, r, err)
			}
			defer body.Close()
			b, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			return info, b
		}
		info, b := get("plain", Whole)
		if !bytes.Equal(b, small) || info.Checksums.CRC64NVME == "" || info.Checksums.Type != integrity.FullObject || info.Length != 1000 {
			t.Errorf("%s: whole GET: %d bytes, %+v", name, len(b), info)
		}
		info, b = get("mp-default", Range{Start: 100, End: 199})
		if !bytes.Equal(b, parts[0][100:200]) || info.Start != 100 || info.Length != 100 || info.Checksums != (Checksums{}) {
			t.Errorf("%s: ranged GET: %+v", name, info)
		}
		info, b = get("mp-composite", Range{PartNumber: 2})
		if !bytes.Equal(b, parts[1]) || info.Start != 5<<20 || info.Length != 5<<20 || info.PartsCount != 3 {
			t.Errorf("%s: part GET: %d bytes, %+v", name, len(b), info)
		}
		if _, _, err := s.Get(ctx, "plain", `"stale"`, Whole); Classify(err) != ClassPreconditionFailed {
			t.Errorf("%s: GET with a stale ETag: %v (class %q)", name, err, Classify(err))
		}
		if _, _, err := s.Get(ctx, "missing", "", Whole); Classify(err) != ClassNotFound {
			t.Errorf("%s: GET of a missing key: %v (class %q)", name, err, Classify(err))
		}
	}
	// Keys that need escaping reach the lean path's signature and the server alike.
	for _, key := range []string{"dir/a b+c%d=é&?#.bin", "x/~!*'();:@$,[]"} {
		srv.PutObject(t, "bkt", key, []byte(key))
		body, _, err := st.Get(ctx, key, "", Whole)
		if err != nil {
			t.Fatalf("GET %q: %v", key, err)
		}
		b, _ := io.ReadAll(body)
		body.Close()
		if string(b) != key {
			t.Errorf("GET %q returned %q", key, b)
		}
	}
	for key, alg := range map[string]integrity.Algorithm{"mp-default": integrity.CRC64NVME, "mp-composite": integrity.CRC32} {
		sums, _, err := st.Head(ctx, key, listed[key].ETag)
		if err != nil || sums.Get(alg) == "" {
			t.Errorf("HEAD %s: %+v %v", key, sums, err)
		}
	}
}
