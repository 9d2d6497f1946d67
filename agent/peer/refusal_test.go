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

package peer_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/agent/peer"
)

// TestRefusalsCannotFillTheLog: anyone on the node network can send unsigned requests; 100 of them
// write each at debug level only, and at most one Info line per interval, with a count.
func TestRefusalsCannotFillTheLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer(&peer.Server{Auth: testKey, Log: log})
	defer srv.Close()
	for range 100 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/"+dataset+"/1/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("an unsigned request answered %d, want 403", resp.StatusCode)
		}
	}
	info, debug := 0, 0
	for line := range strings.Lines(buf.String()) {
		switch {
		case strings.Contains(line, "level=INFO"), strings.Contains(line, "level=WARN"), strings.Contains(line, "level=ERROR"):
			info++
		case strings.Contains(line, "level=DEBUG"):
			debug++
		}
	}
	if info > 2 {
		t.Errorf("100 refused requests wrote %d lines at Info or above, want at most 2:\n%s", info, buf.String())
	}
	if debug != 100 {
		t.Errorf("%d refusals at debug level, want 100", debug)
	}
}
