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

package mountapi

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode feeds the two parsers the bytes of one message: DecodeResponse is what the privileged
// mount side parses from the unprivileged agent, DecodeRequest what the agent parses. Seeds are the
// messages the tests exchange and near misses.
//
// Properties: no panic; an accepted request or response is valid and encodes back to a message
// that decodes equal; an accepted response's directory is clean and absolute; ReadMessage never
// returns more than the cap.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"op":"locate","namespace":"team-a","dataset":"events","generation":2}`))
	f.Add([]byte(`{"op":"inUse","dirs":["/cache/team-a/events-uid"]}`))
	f.Add([]byte(`{"dir":"/cache/team-a/events-uid","holders":"nodes with a ready copy: node-1"}`))
	f.Add([]byte(`{"code":9,"message":"Dataset team-a/events has no copy on node node-1"}`))
	f.Add([]byte(`{"dir":"/cache/../etc"}`))
	f.Add([]byte(`{"dir":"relative"}{"dir":"/x"}`))
	f.Add([]byte("\x00\x00\x00\x05hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := DecodeRequest(b); err == nil {
			if req.Validate() != nil {
				t.Fatalf("accepted an invalid request %+v", req)
			}
			roundTrip(t, req, func(b []byte) (any, error) { return DecodeRequest(b) })
		}
		if resp, err := DecodeResponse(b); err == nil {
			if resp.Dir != "" && (!filepath.IsAbs(resp.Dir) || filepath.Clean(resp.Dir) != resp.Dir || strings.Contains(resp.Dir, "\x00")) {
				t.Fatalf("accepted directory %q", resp.Dir)
			}
			roundTrip(t, resp, func(b []byte) (any, error) { return DecodeResponse(b) })
		}
		if m, err := ReadMessage(bytes.NewReader(b), MaxResponseBytes); err == nil && len(m) > MaxResponseBytes {
			t.Fatalf("read %d bytes past the cap", len(m))
		}
	})
}

func roundTrip[T any](t *testing.T, v T, decode func([]byte) (any, error)) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	again, err := decode(b)
	if err != nil {
		t.Fatalf("%s does not decode again: %v", b, err)
	}
	b2, _ := json.Marshal(again)
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed %s into %s", b, b2)
	}
}
