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
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestTheWebhookServerDropsSlowPosters: a poster that trickles its body a byte at a time is
// disconnected within the server's read timeout (shortened here).
func TestTheWebhookServerDropsSlowPosters(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }),
		ServerTimeouts{ReadHeader: 200 * time.Millisecond, Read: 500 * time.Millisecond, Write: time.Second, Idle: time.Second})
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, conn); close(closed) }()
	if _, err := conn.Write([]byte("POST /events/ns/ds HTTP/1.1\r\nHost: hub\r\nContent-Length: 100\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 100 {
		select {
		case <-closed:
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("a poster trickling its body was kept %s", d)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		_, _ = conn.Write([]byte{'x'})
	}
	t.Errorf("a poster trickling its body for %s was never disconnected", time.Since(start))
}
