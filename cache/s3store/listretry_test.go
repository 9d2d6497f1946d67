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
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/pqcache/pqcache/cache/plan"
)

// TestTheLeanListingRetriesWhatS3AsksToRetry checks that a LIST answered 503 SlowDown (S3's "reduce
// your request rate") or 500 is sent again, as the SDK's path does, while an answer no retry changes
// (403, or a page that breaks the protocol) is not.
func TestTheLeanListingRetriesWhatS3AsksToRetry(t *testing.T) {
	const page = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><IsTruncated>false</IsTruncated>` +
		`<Contents><Key>a.parquet</Key><Size>3</Size><ETag>"e"</ETag><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents></ListBucketResult>`
	for _, tc := range []struct {
		name      string
		failures  int
		status    int
		body      string
		wantCalls int32
		wantErr   bool
	}{
		{"two SlowDowns, then the page", 2, http.StatusServiceUnavailable, `<Error><Code>SlowDown</Code></Error>`, 3, false},
		{"an internal error, then the page", 1, http.StatusInternalServerError, `<Error><Code>InternalError</Code></Error>`, 2, false},
		{"SlowDown past every attempt", 99, http.StatusServiceUnavailable, `<Error><Code>SlowDown</Code></Error>`, 3, true},
		{"access denied", 99, http.StatusForbidden, `<Error><Code>AccessDenied</Code></Error>`, 1, true},
		{"a page that is not a listing", 99, http.StatusOK, `<NotAListing>`, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if calls.Add(1) <= int32(tc.failures) {
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				_, _ = w.Write([]byte(page))
			}))
			defer srv.Close()
			st, err := New(t.Context(), Config{Bucket: "bkt", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true, MaxAttempts: 3,
				Credentials: &Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, HTTPClient: NewHTTPClient(DefaultClientTimeouts)})
			if err != nil {
				t.Fatal(err)
			}
			var keys int
			err = st.List(t.Context(), "", "", func(objs []plan.Object) error { keys += len(objs); return nil })
			if (err != nil) != tc.wantErr {
				t.Fatalf("List: %v, want an error: %v", err, tc.wantErr)
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("%d LISTs sent, want %d", got, tc.wantCalls)
			}
			if !tc.wantErr && keys != 1 {
				t.Errorf("%d keys listed, want 1", keys)
			}
		})
	}
}
