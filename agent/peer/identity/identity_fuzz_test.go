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
	"net/http"
	"strconv"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
)

// FuzzAuthenticate: any Authorization, nonce and timestamp headers. A request is accepted only with
// the agent's token, a nonce of 16 to 128 bytes and a timestamp within the window, and never twice.
func FuzzAuthenticate(f *testing.F) {
	now := time.Unix(2_000_000_000, 0)
	good := jwt("good", now.Add(10*time.Minute))
	f.Add("Bearer "+good, "0123456789abcdef0123456789abcdef", strconv.FormatInt(now.UnixMilli(), 10))
	f.Add("Bearer "+good, "short", strconv.FormatInt(now.UnixMilli(), 10))
	f.Add("Bearer other", "0123456789abcdef0123456789abcdef", strconv.FormatInt(now.UnixMilli(), 10))
	f.Add("Basic "+good, "0123456789abcdef0123456789abcdef", "-1")
	f.Add("Bearer "+good, "0123456789abcdef0123456789abcdef", strconv.FormatInt(now.Add(-3*time.Minute).UnixMilli(), 10))
	f.Fuzz(func(t *testing.T, authz, nonce, ts string) {
		const user = "system:serviceaccount:pqcache:pqcache-agent"
		clock := func() time.Time { return now }
		rev := &fakeReviewer{users: map[string]authnv1.UserInfo{good: {Username: user, Extra: map[string]authnv1.ExtraValue{NodeNameExtra: {"node-a"}}}}}
		v := &Verifier{Reviewer: rev, Username: user, Tokens: &TokenCache{Now: clock}, Replay: &ReplayGuard{Now: clock}}
		r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://peer/", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", authz)
		r.Header.Set(HeaderNonce, nonce)
		r.Header.Set(HeaderTimestamp, ts)
		c, err := v.Authenticate(r)
		if err != nil {
			return
		}
		ms, perr := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
		skew := now.Sub(time.UnixMilli(ms))
		if r.Header.Get("Authorization") != "Bearer "+good || c.Node != "node-a" || len(r.Header.Get(HeaderNonce)) < 16 ||
			perr != nil || skew > DefaultWindow || skew < -DefaultWindow {
			t.Fatalf("accepted %q nonce %q at %q as %+v", authz, nonce, ts, c)
		}
		if _, err := v.Authenticate(r); err == nil {
			t.Fatal("the same request was accepted twice")
		}
	})
}
