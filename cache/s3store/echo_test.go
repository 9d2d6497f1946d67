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
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestAnAnswerThatIsNotS3sIsNotEchoed: a tenant's endpoint may be any service a node reaches. Its
// answer, when it is not S3's own XML error document, is reported by status code and length, never
// echoed into an error (which lands in the status of the tenant's Dataset), by every request the
// store sends, the lean path's and the SDK's alike.
func TestAnAnswerThatIsNotS3sIsNotEchoed(t *testing.T) {
	const secret = "sk-live-SECRETSECRETSECRET"
	page := "<html><body>internal admin console; token=" + secret + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(page))
		}
	}))
	defer srv.Close()
	st := storeAt(t, srv.URL, DefaultClientTimeouts)
	ctx := context.Background()
	length := strconv.Itoa(len(page))
	checks := map[string]func() error{
		"list": func() error { return listOnce(st) },
		"get": func() error {
			_, _, err := st.Get(ctx, "p/a.parquet", "", Range{End: -1})
			return err
		},
		"put":    func() error { return st.Put(ctx, "p/a.parquet", bytes.NewReader([]byte("x")), 1) },
		"delete": func() error { return st.Delete(ctx, "p/a.parquet") },
		"bucket": func() error { return st.EnsureBucket(ctx) },
	}
	for name, check := range checks {
		err := check()
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, secret) || strings.Contains(msg, "admin console") {
			t.Errorf("%s: the answer's body is in the error: %s", name, msg)
		}
		if !strings.Contains(msg, "404") {
			t.Errorf("%s: the error does not give the status code: %s", name, msg)
		}
		if name == "list" || name == "get" {
			if !strings.Contains(msg, length+" bytes") {
				t.Errorf("%s: the error does not give the answer's length (%s bytes): %s", name, length, msg)
			}
		}
	}
}

// TestS3sErrorDocumentStillSpeaks: S3's own error document gives its code and message, as before.
func TestS3sErrorDocumentStillSpeaks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
	}))
	defer srv.Close()
	err := listOnce(storeAt(t, srv.URL, DefaultClientTimeouts))
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "Access Denied") {
		t.Errorf("an S3 error document: %v, want its code and message", err)
	}
	if c := Classify(err); c != "AccessDenied" {
		t.Errorf("classified %q, want AccessDenied", c)
	}
}

// TestAnonymousSignsNothing: a Store told to read anonymously sends no Authorization header, though
// the process's environment holds credentials (its ambient identity); without it, it signs with them.
func TestAnonymousSignsNothing(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ambient-secret")
	auth := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
			`<Name>bkt</Name><Prefix>p/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
	}))
	defer srv.Close()
	for _, anonymous := range []bool{true, false} {
		st, err := New(t.Context(), Config{Bucket: "bkt", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true, Anonymous: anonymous})
		if err != nil {
			t.Fatal(err)
		}
		if err := listOnce(st); err != nil {
			t.Fatal(err)
		}
		got := <-auth
		if anonymous && got != "" {
			t.Errorf("an anonymous listing was signed: %q", got)
		}
		if !anonymous && !strings.Contains(got, "AKIAAMBIENT") {
			t.Errorf("a listing with the environment's credentials was signed %q", got)
		}
	}
}
