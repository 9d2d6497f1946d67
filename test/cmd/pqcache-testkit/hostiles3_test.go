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

package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pqcache/pqcache/test/hostiles3"
)

// TestHostileRulesFromFlags checks that --rule sets a bucket's behaviour for its kind of request only,
// that --objects fills it, and that a malformed rule is refused with its text.
func TestHostileRulesFromFlags(t *testing.T) {
	s := hostiles3.New()
	if err := applyRules(s, []string{"storm=503-storm:list"}, 2); err != nil {
		t.Fatal(err)
	}
	get := func(target string) int {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil))
		return rec.Code
	}
	if code := get("/storm?list-type=2&prefix=data/"); code != http.StatusServiceUnavailable {
		t.Errorf("a listing of the stormy bucket answered %d, want 503", code)
	}
	if code := get("/storm/data/0001.bin"); code != http.StatusOK {
		t.Errorf("a GET of a listed object answered %d, want 200 (the rule is for listings only)", code)
	}
	for _, bad := range []string{"nobucket", "=503-storm", "b=no-such-behaviour", "b=503-storm:sideways"} {
		if err := applyRules(hostiles3.New(), []string{bad}, 0); err == nil {
			t.Errorf("--rule %q was accepted", bad)
		}
	}
}
