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

package identity

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
)

// clock is a settable time for the guards.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestReplayGuard(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	g := &ReplayGuard{Window: 2 * time.Minute, Max: 3, Now: c.now}
	steps := []struct {
		name  string
		nonce string
		at    time.Duration // from now
		want  string        // "" accepted, else part of the error
	}{
		{"fresh", "n1", 0, ""},
		{"replayed", "n1", 0, "sent before"},
		{"a little early", "n2", -90 * time.Second, ""},
		{"a little late", "n3", 90 * time.Second, ""},
		{"stale", "n4", -3 * time.Minute, "from this peer's clock"},
		{"from the future", "n5", 3 * time.Minute, "from this peer's clock"},
		{"full: refused, not forgotten", "n6", 0, "as many recent requests"},
	}
	for _, s := range steps {
		err := g.Check(s.nonce, c.t.Add(s.at))
		if s.want == "" && err != nil || s.want != "" && (err == nil || !strings.Contains(err.Error(), s.want)) {
			t.Fatalf("%s: got %v, want %q", s.name, err, s.want)
		}
	}
	if !errors.Is(g.Check("n1", c.t), ErrReplay) {
		t.Fatal("a replay is not ErrReplay")
	}
	// 2×Window later the old nonces are forgotten: a replay of them is stale by its timestamp.
	at := c.t
	c.t = c.t.Add(4*time.Minute + time.Second)
	if g.Len() != 3 {
		t.Fatalf("remembered %d, want 3 before expiry", g.Len())
	}
	if err := g.Check("n1", at); err == nil {
		t.Fatal("a replay after the window was accepted")
	}
	if err := g.Check("n7", c.t); err != nil || g.Len() != 1 {
		t.Fatalf("after expiry: %v, %d remembered", err, g.Len())
	}
}

func TestTokenCache(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	tc := &TokenCache{Max: 2, Now: c.now}
	r := Review{Username: "u", Node: "n"}
	tc.Put("long", r, c.t.Add(time.Hour))
	tc.Put("short", r, c.t.Add(time.Minute))
	tc.Put("expiring", r, c.t.Add(10*time.Second))
	tc.Put("unknown", r, time.Time{})
	if _, ok := tc.Get("expiring"); ok {
		t.Error("a token within CacheMargin of its expiry was kept")
	}
	if _, ok := tc.Get("unknown"); ok {
		t.Error("a token without expiry was kept")
	}
	if got, ok := tc.Get("long"); !ok || got.Node != "n" {
		t.Errorf("long: %v %v", got, ok)
	}
	c.t = c.t.Add(31 * time.Second) // short's margin has come
	if _, ok := tc.Get("short"); ok {
		t.Error("short was kept past its expiry minus CacheMargin")
	}
	c.t = c.t.Add(MaxCacheTTL)
	if _, ok := tc.Get("long"); ok {
		t.Error("long was kept past MaxCacheTTL")
	}
	for i := range 10 {
		tc.Put(strconv.Itoa(i), r, c.t.Add(time.Hour))
	}
	if tc.Len() > 2 {
		t.Errorf("the cache holds %d, bound 2", tc.Len())
	}
}

// fakeReviewer answers as the API server would for the tokens it knows (a pure-logic stand-in;
// the envtest test in agent/peer/peertls asks a real API server).
type fakeReviewer struct {
	users map[string]authnv1.UserInfo
	calls int
}

func (f *fakeReviewer) Review(_ context.Context, token string) (authnv1.UserInfo, error) {
	f.calls++
	u, ok := f.users[token]
	if !ok {
		return u, errors.New("the caller's token is not valid")
	}
	return u, nil
}

// jwt is a token-shaped string with exp, for the cache's expiry.
func jwt(name string, exp time.Time) string {
	p := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"exp":%d,"sub":%q}`, exp.Unix(), name))
	return "e30." + p + ".sig"
}

func TestVerifier(t *testing.T) {
	const agents = "system:serviceaccount:pqcache:pqcache-agent"
	exp := time.Now().Add(10 * time.Minute)
	good, other, unbound := jwt("good", exp), jwt("other", exp), jwt("unbound", exp)
	f := &fakeReviewer{users: map[string]authnv1.UserInfo{
		good:    {Username: agents, Extra: map[string]authnv1.ExtraValue{NodeNameExtra: {"node-a"}}},
		other:   {Username: "system:serviceaccount:default:default", Extra: map[string]authnv1.ExtraValue{NodeNameExtra: {"node-a"}}},
		unbound: {Username: agents},
	}}
	v := &Verifier{Reviewer: f, Username: agents, Tokens: &TokenCache{}, Replay: &ReplayGuard{}}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := v.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		got = append(got, c.Node)
	}))
	t.Cleanup(srv.Close)
	// send sends a request as an agent does, and returns its status and the headers it carried.
	send := func(token string) (int, http.Header) {
		var sent http.Header
		doer := Signing{Token: func() (string, error) { return token, nil },
			Next: doerFunc(func(r *http.Request) (*http.Response, error) { sent = r.Header.Clone(); return srv.Client().Do(r) })}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		resp, err := doer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, sent
	}
	// resend sends a captured request again, headers as they were.
	resend := func(h http.Header) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		req.Header = h.Clone()
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	code, captured := send(good)
	if code != http.StatusOK || len(got) != 1 || got[0] != "node-a" {
		t.Fatalf("a valid request: %d, nodes %v", code, got)
	}
	if code, _ := send(good); code != http.StatusOK || f.calls != 1 {
		t.Fatalf("a second request: %d after %d reviews, want 200 after 1 (cached)", code, f.calls)
	}
	if code := resend(captured); code != http.StatusForbidden {
		t.Errorf("a replayed request: %d, want 403", code)
	}
	for name, token := range map[string]string{"another ServiceAccount": other, "no node": unbound, "unknown": jwt("x", exp)} {
		if code, _ := send(token); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	stale := captured.Clone()
	stale.Set(HeaderNonce, strings.Repeat("a", 32))
	stale.Set(HeaderTimestamp, strconv.FormatInt(time.Now().Add(-5*time.Minute).UnixMilli(), 10))
	if code := resend(stale); code != http.StatusForbidden {
		t.Errorf("a stale timestamp with a new nonce: %d, want 403", code)
	}
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
