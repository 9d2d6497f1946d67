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

package notify

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqcache/pqcache/test/s3test"
)

const testToken = "s3cret-token"

// webhookHarness serves a Webhook for Dataset ns/ds (token testToken) on a 127.0.0.1 test server.
type webhookHarness struct {
	h       *harness
	srv     *httptest.Server
	tokenFn func(ctx context.Context, key string) (string, error)
}

func newWebhookHarness(t *testing.T, queryToken bool) *webhookHarness {
	w := &webhookHarness{h: newHarness(t, DebounceConfig{})}
	w.tokenFn = func(_ context.Context, key string) (string, error) {
		if key == dsKey {
			return testToken, nil
		}
		return "", nil
	}
	hook := NewWebhook(w.h.d, WebhookConfig{MaxBody: 4096, QueryToken: queryToken,
		Token: func(ctx context.Context, key string) (string, error) { return w.tokenFn(ctx, key) }})
	w.srv = httptest.NewServer(hook)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhookHarness) post(t *testing.T, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestWebhookQueryTokenIsOffByDefault: without WebhookConfig.QueryToken, a right token in the query
// string is refused (and counted) as no token: access logs keep URLs. The header always works.
func TestWebhookQueryTokenIsOffByDefault(t *testing.T) {
	w := newWebhookHarness(t, false)
	body := s3Message("tpch/a", "01")
	before := w.h.stats().Unauthorized
	if code, _ := w.post(t, "/events/ns/ds?token="+testToken, "", body); code != http.StatusUnauthorized {
		t.Errorf("query token: status %d, want 401", code)
	}
	if n := w.h.stats().Unauthorized - before; n != 1 {
		t.Errorf("%d refusals counted, want 1", n)
	}
	if code, _ := w.post(t, "/events/ns/ds", "Bearer "+testToken, body); code != http.StatusOK {
		t.Errorf("bearer token: status %d, want 200", code)
	}
}

// TestWebhookAuthentication, with the query-string form turned on (as for versitygw).
func TestWebhookAuthentication(t *testing.T) {
	w := newWebhookHarness(t, true)
	body := s3Message("tpch/a", "01")
	tests := []struct {
		name, path, auth string
		want             int
		counted          bool
	}{
		{"no token", "/events/ns/ds", "", http.StatusUnauthorized, true},
		{"wrong bearer token", "/events/ns/ds", "Bearer nope", http.StatusUnauthorized, true},
		{"token of the right length, wrong", "/events/ns/ds", "Bearer " + strings.Repeat("x", len(testToken)), http.StatusUnauthorized, true},
		{"wrong query token", "/events/ns/ds?token=nope", "", http.StatusUnauthorized, true},
		{"another scheme", "/events/ns/ds?token=" + testToken, "Basic " + testToken, http.StatusUnauthorized, true},
		{"a Dataset without a webhook", "/events/ns/other", "Bearer " + testToken, http.StatusUnauthorized, false},
		{"no such path", "/events/ns", "Bearer " + testToken, http.StatusNotFound, false},
		{"too deep a path", "/events/ns/ds/x", "Bearer " + testToken, http.StatusNotFound, false},
		{"bearer token", "/events/ns/ds", "Bearer " + testToken, http.StatusOK, false},
		{"bearer, scheme in lower case", "/events/ns/ds", "bearer " + testToken, http.StatusOK, false},
		{"query token (versitygw cannot send headers)", "/events/ns/ds?token=" + testToken, "", http.StatusOK, false},
	}
	for _, tt := range tests {
		before := w.h.stats().Unauthorized
		code, _ := w.post(t, tt.path, tt.auth, body)
		if code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, code, tt.want)
		}
		counted := w.h.stats().Unauthorized - before
		if (counted == 1) != tt.counted {
			t.Errorf("%s: counted %d refusals, want counted=%v", tt.name, counted, tt.counted)
		}
	}
	if s := w.h.stats(); s.Received != 3 || s.Pending != 1 || s.Coalesced != 2 || s.LastUnauthorized.IsZero() {
		t.Errorf("stats = %+v, want the 3 accepted posts received, 1 pending, a refusal time", s)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, w.srv.URL+"/events/ns/ds?token="+testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
}

func TestWebhookBodies(t *testing.T) {
	w := newWebhookHarness(t, false)
	auth := "Bearer " + testToken
	if code, reply := w.post(t, "/events/ns/ds", auth, awsTestEvent); code != http.StatusOK || !strings.Contains(reply, `"accepted":0`) {
		t.Errorf("test event: %d %s, want 200 accepting nothing", code, reply)
	}
	if code, reply := w.post(t, "/events/ns/ds", auth, records(rec("aws:s3", "ObjectCreated:Put", "tpch/a", "01"), rec("aws:s3", "ObjectCreated:Put", "raw/b", "01"))); code != http.StatusOK || !strings.Contains(reply, `{"accepted":1,"ignored":1}`) {
		t.Errorf("records: %d %s, want 200 accepting 1, ignoring 1", code, reply)
	}
	if s := w.h.stats(); s.Lost != 0 || s.Pending != 1 {
		t.Fatalf("stats = %+v", s)
	}
	// A body the webhook cannot take is an event lost: the next batch is a listing.
	if code, _ := w.post(t, "/events/ns/ds", auth, `{"hello":1}`); code != http.StatusBadRequest {
		t.Errorf("unrecognized body: status %d, want 400", code)
	}
	if code, _ := w.post(t, "/events/ns/ds", auth, strings.Repeat(" ", 5000)+"{}"); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: status %d, want 413", code)
	}
	if s := w.h.stats(); s.Lost != 2 {
		t.Errorf("lost = %d, want 2", s.Lost)
	}
	w.h.clock.Advance(DefaultWindow)
	if len(w.h.batches) != 1 || w.h.batches[0].Overflow != OverflowEventsLost {
		t.Errorf("batches = %+v, want one EventsLost overflow", w.h.batches)
	}
	// A refused token never reaches the Debouncer, whatever the body.
	if code, _ := w.post(t, "/events/ns/ds", "Bearer nope", `{"hello":1}`); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated junk: status %d, want 401", code)
	}
	if s := w.h.stats(); s.Lost != 2 {
		t.Errorf("an unauthenticated request marked events lost")
	}
	// The token store failing is the server's problem, not the caller's.
	w.tokenFn = func(context.Context, string) (string, error) { return "", errors.New("apiserver down") }
	if code, _ := w.post(t, "/events/ns/ds", auth, awsTestEvent); code != http.StatusServiceUnavailable {
		t.Errorf("token lookup failing: status %d, want 503", code)
	}
}

// TestWebhookFromVersitygw points a real versitygw's --event-webhook-url at the webhook and checks
// what arrives for PUT, copy, DELETE and DeleteObjects.
func TestWebhookFromVersitygw(t *testing.T) {
	batches := make(chan *Batch, 10)
	d := NewDebouncer(DebounceConfig{Window: 300 * time.Millisecond}, func(b *Batch) { batches <- b })
	defer d.Close()
	scope, err := NewScope("lake", "tpch/", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Configure(dsKey, scope)
	hook := NewWebhook(d, WebhookConfig{QueryToken: true, Token: func(_ context.Context, key string) (string, error) {
		if key == dsKey {
			return testToken, nil
		}
		return "", nil
	}})
	web := httptest.NewServer(hook)
	defer web.Close()
	// versitygw posts a test event at start-up and refuses to start if the URL does not answer.
	gw := s3test.StartWithArgs(t, "--event-webhook-url", web.URL+"/events/ns/ds?token="+testToken)
	gw.CreateBucket(t, "lake")
	c := gw.Client()
	ctx := context.Background()

	next := func(what string) *Batch {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case <-time.After(15 * time.Second):
			t.Fatalf("no batch for %s", what)
			return nil
		}
	}
	putObj := func(key, body string) string {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatalf("putting %s: %v", key, err)
		}
		return aws.ToString(out.ETag)
	}

	// Two writes, one with a key that URL-decoding would corrupt, and one outside the prefix.
	odd := "tpch/lineitem/dt=2026-01-02/a b+c%.parquet"
	etagOdd := putObj(odd, "hello parquet")
	etagPlain := putObj("tpch/orders/o.parquet", "0123456789")
	putObj("raw/x", "ignored")
	b := next("two writes")
	byKey := map[string]Change{}
	for _, ch := range b.Changes {
		byKey[ch.Key] = ch
	}
	if len(b.Changes) != 2 {
		t.Fatalf("batch holds %v, want the two writes under tpch/", keysOf(b))
	}
	for key, want := range map[string]struct {
		size int64
		etag string
	}{odd: {13, etagOdd}, "tpch/orders/o.parquet": {10, etagPlain}} {
		got, ok := byKey[key]
		switch {
		case !ok:
			t.Errorf("no change for %q (got %v)", key, keysOf(b))
		case got.Removed || got.Size != want.size || got.ETag != want.etag || got.Sequencer == "" || got.EventTime.IsZero():
			t.Errorf("change for %q = %+v, want a write of %d bytes, ETag %s, a sequencer and an event time", key, got, want.size, want.etag)
		}
	}
	if CompareSequencers(byKey[odd].Sequencer, byKey["tpch/orders/o.parquet"].Sequencer) >= 0 {
		t.Errorf("sequencers %s then %s do not increase with the order of the writes", byKey[odd].Sequencer, byKey["tpch/orders/o.parquet"].Sequencer)
	}
	b.Ack(Outcome{})

	// A copy: versitygw reports size 0 for it (a hint only; the consumer checks the bucket).
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("lake"), Key: aws.String("tpch/orders/copy.parquet"), CopySource: aws.String("lake/tpch/orders/o.parquet")}); err != nil {
		t.Fatal(err)
	}
	b = next("a copy")
	if len(b.Changes) != 1 || b.Changes[0].Key != "tpch/orders/copy.parquet" || b.Changes[0].Removed {
		t.Fatalf("batch = %+v, want the copy", b.Changes)
	}
	if b.Changes[0].Size != 0 {
		t.Errorf("versitygw now reports a copy's size (%d): update docs/events.md, which says it sends 0", b.Changes[0].Size)
	}
	b.Ack(Outcome{})

	// A delete and a multi-object delete.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lake"), Key: aws.String("tpch/orders/o.parquet")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("lake"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String(odd)}, {Key: aws.String("tpch/orders/copy.parquet")},
	}}}); err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for len(removed) < 3 {
		b = next("the deletes")
		for _, ch := range b.Changes {
			if !ch.Removed || ch.Sequencer == "" {
				t.Errorf("change %+v, want a removal with a sequencer", ch)
			}
			removed[ch.Key] = true
		}
		b.Ack(Outcome{})
	}
	for _, key := range []string{odd, "tpch/orders/o.parquet", "tpch/orders/copy.parquet"} {
		if !removed[key] {
			t.Errorf("no removal for %q (got %v)", key, removed)
		}
	}
	s, _ := d.Stats(dsKey)
	if s.Received != 7 || s.Ignored != 1 || s.Applied != 6 || s.Unauthorized != 0 {
		t.Errorf("stats = %+v, want 7 received (6 applied, 1 outside the prefix), nothing refused", s)
	}

	// A versitygw with the wrong token: every post, its start-up test event included, is refused
	// and counted, and nothing reaches the batch. versitygw ignores the 401 (the event is lost).
	bad := s3test.StartWithArgs(t, "--event-webhook-url", web.URL+"/events/ns/ds?token=wrong")
	bad.CreateBucket(t, "lake")
	bad.PutObject(t, "lake", "tpch/orders/p.parquet", []byte("x"))
	eventually(t, 10*time.Second, "refusals counted", func() bool { s, _ := d.Stats(dsKey); return s.Unauthorized >= 2 })
	if s, _ := d.Stats(dsKey); s.Pending != 0 || s.Received != 7 {
		t.Errorf("a refused post reached the Debouncer: %+v", s)
	}
}
