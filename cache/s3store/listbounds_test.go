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
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/cache/plan"
)

// TestListingBoundsOnBothPaths: the lean listing and the SDK's (used where the lean path is off)
// enforce the same bounds against a hostile endpoint on 127.0.0.1.
func TestListingBoundsOnBothPaths(t *testing.T) {
	entry := func(key string, size int64) string {
		return fmt.Sprintf(`<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00Z</LastModified><ETag>"e"</ETag><Size>%d</Size></Contents>`, key, size)
	}
	page := func(body, more string) string {
		return listHead + body + more + "</ListBucketResult>"
	}
	truncated := func(token string) string {
		return "<IsTruncated>true</IsTruncated><NextContinuationToken>" + token + "</NextContinuationToken>"
	}
	const done = "<IsTruncated>false</IsTruncated>"
	cases := []struct {
		name    string
		answer  func(w io.Writer, n int64) // n: the request's number, from 1
		wantErr string                     // "" for a listing that ends well
		refused []string
	}{
		{"endless body", func(w io.Writer, _ int64) {
			_, _ = io.WriteString(w, listHead+done)
			pad := strings.Repeat(" ", 64<<10)
			for range 4 * MaxListPageBytes / len(pad) {
				if _, err := io.WriteString(w, pad); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, "</ListBucketResult>")
		}, "over 16777216 bytes", nil},
		{"repeated token", func(w io.Writer, n int64) {
			_, _ = io.WriteString(w, page(entry(fmt.Sprintf("p/%04d", n), 1), truncated("same")))
		}, `continuation token "same" came back`, nil},
		{"tokens in a cycle", func(w io.Writer, n int64) {
			_, _ = io.WriteString(w, page(entry(fmt.Sprintf("p/%04d", n), 1), truncated(fmt.Sprint(n%3))))
		}, `continuation token "1" came back`, nil},
		{"endless empty pages", func(w io.Writer, n int64) {
			_, _ = io.WriteString(w, page("", truncated(fmt.Sprint(n))))
		}, "more than 100 empty pages in a row", nil},
		{"truncated without a token", func(w io.Writer, _ int64) {
			_, _ = io.WriteString(w, page(entry("p/a", 1), "<IsTruncated>true</IsTruncated>"))
		}, "gives no continuation token", nil},
		{"a page that is not a listing", func(w io.Writer, _ int64) {
			_, _ = io.WriteString(w, listHead+entry("p/a", 1)+"<Contents><Key>p/b") // cut short: a lying Content-Length
		}, "does not parse as a listing", nil},
		{"empty pages, then the end", func(w io.Writer, n int64) {
			more := truncated(fmt.Sprint(n))
			if n > MaxEmptyListPages {
				more = done
			}
			_, _ = io.WriteString(w, page("", more))
		}, "", nil},
		{"refused objects", func(w io.Writer, _ int64) {
			_, _ = io.WriteString(w, page(entry("other/x", 1)+entry("p/a", 1)+entry("p/b", -1)+entry("pq/c", 1), done))
		}, "", []string{"other/x", "b", "pq/c"}},
	}
	for _, tc := range cases {
		for _, path := range []string{"lean", "sdk"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				var requests atomic.Int64
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					n := requests.Add(1)
					if n > 1000 { // an end, so that a listing without bounds fails the test instead of hanging
						_, _ = io.WriteString(w, page("", done))
						return
					}
					tc.answer(w, n)
				}))
				defer srv.Close()
				client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, RetryMaxAttempts: 1,
					Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
				st, err := New(context.Background(), Config{Bucket: "b", Client: client})
				if err != nil {
					t.Fatal(err)
				}
				if path == "sdk" {
					st.fast = nil
				} else if st.fast == nil {
					t.Fatal("the lean path is off")
				}
				var refused []string
				err = st.ListPages(context.Background(), "p/", "p/", func(p Page) error {
					for _, r := range p.Refused {
						if !errors.Is(r.Err, plan.ErrHostileKey) {
							t.Errorf("refusal of %q: %v, want ErrHostileKey", r.Key, r.Err)
						}
						refused = append(refused, r.Key)
					}
					return nil
				})
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("listing: %v", err)
				case tc.wantErr != "" && (!errors.Is(err, ErrSourceMisbehaving) || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("listing returned %v, want ErrSourceMisbehaving saying %q", err, tc.wantErr)
				}
				if fmt.Sprint(refused) != fmt.Sprint(tc.refused) {
					t.Errorf("refused %v, want %v", refused, tc.refused)
				}
			})
		}
	}
}
