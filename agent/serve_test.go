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

package agent_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pqcache/pqcache/agent"
)

// startPeerServer serves h as the agent serves its peers, with timeouts shortened for the test.
func startPeerServer(t *testing.T, h http.Handler) string {
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := agent.PeerServer{Listener: l, Server: h,
		Timeouts: agent.ServerTimeouts{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Idle: time.Second}}
	go func() { _ = ps.Start(t.Context()) }()
	return l.Addr().String()
}

// trickle sends msg one byte every 50ms and returns how long the server kept the connection.
func trickle(t *testing.T, addr, msg string) time.Duration {
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, conn); close(closed) }()
	start := time.Now()
	for i := range len(msg) {
		select {
		case <-closed:
			return time.Since(start)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := conn.Write([]byte{msg[i]}); err != nil {
			return time.Since(start)
		}
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
	}
	return time.Since(start)
}

// TestThePeerServerDropsSlowClients: a client that sends its headers, or its body, a byte at a time
// (slowloris) is disconnected within the peer server's read-header and read timeouts, not served
// for as long as it likes.
func TestThePeerServerDropsSlowClients(t *testing.T) {
	addr := startPeerServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	headers := "GET /ns.ds/1/a HTTP/1.1\r\nHost: peer\r\nX-Slow: " + string(make([]byte, 200)) + "\r\n\r\n"
	if d := trickle(t, addr, headers); d > 2*time.Second {
		t.Errorf("a client trickling its headers was kept %s", d)
	}
	body := "PUT /ns.ds/1/a HTTP/1.1\r\nHost: peer\r\nContent-Length: 200\r\n\r\n" + string(make([]byte, 200))
	if d := trickle(t, addr, body); d > 2*time.Second {
		t.Errorf("a client trickling its body was kept %s", d)
	}
}
