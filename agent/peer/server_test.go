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
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
)

// TestPeerSpeaksS3ToTheSDK: the AWS SDK lists a generation page by page, and gets a range; a request
// signed with another secret, an unknown bucket, and a write are refused with S3's error codes.
func TestPeerSpeaksS3ToTheSDK(t *testing.T) {
	l := newLake(t)
	l.fill(6)
	g := l.syncSeed()
	from, err := peer.NewStore(context.Background(), l.peer.URL, testKey, dataset)
	if err != nil {
		t.Fatal(err)
	}
	client := s3.New(s3.Options{Region: peer.Region, BaseEndpoint: aws.String(l.peer.URL), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testKey.ID, SecretAccessKey: testKey.Secret}, nil
		})})
	var keys []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(dataset), Prefix: aws.String(peer.Prefix(g)), MaxKeys: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range out.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), peer.Prefix(g)))
		}
	}
	if len(keys) != 7 || pages != 4 {
		t.Errorf("listed %d keys in %d pages: %v; want 7 in 4", len(keys), pages, keys)
	}
	body, info, err := from.Get(context.Background(), peer.Prefix(g)+"blob with space/ü.bin", "", s3store.Range{Start: 10, End: 19})
	if err != nil {
		t.Fatal(err)
	}
	body.Close()
	if info.Start != 10 || info.Length != 10 {
		t.Errorf("range 10-19: start %d, length %d", info.Start, info.Length)
	}

	wrong, err := peer.NewStore(context.Background(), l.peer.URL, peer.Key{ID: testKey.ID, Secret: "guessed"}, dataset)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wrong.Get(context.Background(), peer.Prefix(g)+"sum.parquet", "", s3store.Whole); s3store.Classify(err) != wire.ReasonInvalidCredentials {
		t.Errorf("a request signed with another secret: %v, want SignatureDoesNotMatch", err)
	}
	other, err := peer.NewStore(context.Background(), l.peer.URL, testKey, "default.other")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Get(context.Background(), peer.Prefix(g)+"sum.parquet", "", s3store.Whole); s3store.Classify(err) != wire.ReasonNoSuchBucket {
		t.Errorf("an unknown dataset: %v, want NoSuchBucket", err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, l.peer.URL+"/"+dataset+"/"+peer.Prefix(g)+"x", strings.NewReader("x"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a PUT: %s, want 405", resp.Status)
	}
}

// TestListMaxKeysZero: S3 answers max-keys=0 with an empty page that is not truncated; the peer once
// panicked on it (it took the last key of an empty page for the continuation token).
func TestListMaxKeysZero(t *testing.T) {
	l := newLake(t)
	l.fill(3)
	g := l.syncSeed()
	client := s3.New(s3.Options{Region: peer.Region, BaseEndpoint: aws.String(l.peer.URL), UsePathStyle: true,
		RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testKey.ID, SecretAccessKey: testKey.Secret}, nil
		})})
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(dataset), Prefix: aws.String(peer.Prefix(g)), MaxKeys: aws.Int32(0)})
	if err != nil {
		t.Fatalf("max-keys=0: %v", err)
	}
	if len(out.Contents) != 0 || aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) != "" || aws.ToInt32(out.KeyCount) != 0 {
		t.Errorf("max-keys=0: %d keys, truncated %v, next %q, key count %d; want an empty page, not truncated",
			len(out.Contents), aws.ToBool(out.IsTruncated), aws.ToString(out.NextContinuationToken), aws.ToInt32(out.KeyCount))
	}
}
