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

package hostiles3

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func request(t *testing.T, method, url string, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestControlAndGoodAnswers: the server binds 127.0.0.1 only, serves what was put, and the control
// API switches a bucket, refusing behaviours it does not know; Close ends an answer that would
// never come.
func TestControlAndGoodAnswers(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("serving on %s, want 127.0.0.1 only", s.URL())
	}
	if code, _ := request(t, http.MethodPut, s.URL()+"/b/p/k.bin", "hello"); code != http.StatusOK {
		t.Fatalf("put: %d", code)
	}
	if code, body := request(t, http.MethodGet, s.URL()+"/b?list-type=2&prefix=p/", ""); code != http.StatusOK || !strings.Contains(body, "<Key>p/k.bin</Key><LastModified>") || !strings.Contains(body, "<Size>5</Size>") {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, _ := request(t, http.MethodPut, s.URL()+"/_hostile/rules/b?behaviour=no-such", ""); code != http.StatusBadRequest {
		t.Fatalf("an unknown behaviour: %d, want 400", code)
	}
	if code, _ := request(t, http.MethodPut, s.URL()+"/_hostile/rules/b?behaviour=503-storm&op=get", ""); code != http.StatusNoContent {
		t.Fatalf("switching: %d", code)
	}
	if code, _ := request(t, http.MethodGet, s.URL()+"/b/p/k.bin", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("a GET after switching: %d, want 503", code)
	}
	if code, body := request(t, http.MethodGet, s.URL()+"/b?list-type=2&prefix=p/", ""); code != http.StatusOK || !strings.Contains(body, "p/k.bin") {
		t.Fatalf("a LIST after switching GETs only: %d %s", code, body)
	}
	s.Set("b", Rule{Behaviour: SlowHeaders})
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL()+"/b/p/k.bin", nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a held request waiting")
	}
}

// TestAnUploadOverTheCapIsRefusedWhole checks that a PUT larger than maxPutBytes gets 413 and
// stores nothing, rather than an object cut at the cap.
func TestAnUploadOverTheCapIsRefusedWhole(t *testing.T) {
	s := New()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPut, "/b/big.bin", strings.NewReader(strings.Repeat("x", maxPutBytes+1)))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a PUT of %d bytes answered %d, want 413", maxPutBytes+1, rec.Code)
	}
	if _, ok := s.Object("b", "big.bin"); ok {
		t.Error("the refused upload was stored")
	}
}
