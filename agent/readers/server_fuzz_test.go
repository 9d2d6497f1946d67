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

package readers

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/pqcache/pqcache/internal/s3creds"
)

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// teamAOnly are contents only team-a's Datasets hold.
var teamAOnly = []string{"sales one", "sales two", "the lake", "shadowed", "beside"}

// FuzzReaderServe sends the endpoint requests signed with team-b's key: any method, path, query,
// Range and session token, what a tenant's pod can send. Properties: no request crashes the
// server or fails inside it (500); every refusal or error is an S3 error document; and no answer
// carries a byte of team-a's Datasets, whatever the path names.
func FuzzReaderServe(f *testing.F) {
	fx := newFixture(f)
	f.Add(false, "/lake/secret/keys.txt", "", "", "")
	f.Add(false, "/lake/sales/day=1/a.parquet", "", "bytes=-3", "pqcache-pin/v1;s=x")
	f.Add(false, "/lake", "list-type=2&prefix=sales%2F&delimiter=%2F", "", "")
	f.Add(false, "/lake", "list-type=2&start-after=a&continuation-token=c2VjcmV0", "", "pqcache-pin/v1;g=secret:1")
	f.Add(true, "/lake/secret/keys.txt", "partNumber=1", "bytes=0-0", "pqcache-pin/v1;s=y;g=sales:1")
	f.Add(false, "/lake", "location", "", "")
	f.Add(false, "/", "", "", "")
	f.Add(false, "/lake/secret/../sales/day=1/a.parquet", "", "", "")
	f.Add(false, "/other/secret/keys.txt", "", "", "")
	f.Fuzz(func(t *testing.T, head bool, path, query, rng, token string) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		u, err := url.Parse("http://pqcache-s3.pqcache.svc" + path)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		u.RawQuery = query
		r, err := http.NewRequestWithContext(context.Background(), method, u.String(), nil)
		if err != nil {
			return
		}
		if rng != "" {
			r.Header.Set("Range", rng)
		}
		id := s3creds.AccessKey{Namespace: "team-b", KeyGen: 1, Epoch: s3creds.DefaultEpochs.At(time.Now())}.ID()
		r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		creds := aws.Credentials{AccessKeyID: id, SecretAccessKey: s3creds.Secret(master, id), SessionToken: token}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, emptySHA256, "s3", "us-east-1", time.Now(),
			func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
			return
		}
		r.RemoteAddr = "10.0.0.8:40000"
		w := httptest.NewRecorder()
		fx.srv.ServeHTTP(w, r)
		if w.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s: 500 %s", method, u, w.Body)
		}
		if w.Code >= 400 && method == http.MethodGet {
			var e struct{ Code, Message string }
			if err := xml.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" {
				t.Fatalf("%s %s: %d with %q, not an S3 error (%v)", method, u, w.Code, w.Body, err)
			}
		}
		for _, s := range teamAOnly {
			if strings.Contains(w.Body.String(), s) {
				t.Fatalf("%s %s (token %q): team-b read team-a's %q: %s", method, u, token, s, w.Body)
			}
		}
	})
}
