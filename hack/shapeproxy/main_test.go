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
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The proxy relays every byte both ways, through a shaped connection, for requests on a kept-alive
// connection too.
func TestProxyRelaysRequestsAndResponsesWhole(t *testing.T) {
	body := make([]byte, 3<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", http.StatusText(len(in)%600+1)) // anything derived from the request
		w.Write(body)
	}))
	defer srv.Close()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{upstream: srv.Listener.Addr().String(), latency: 2 * time.Millisecond, rate: 200 << 20, log: slog.New(slog.DiscardHandler)}
	served := make(chan error, 1)
	go func() { served <- p.serve(ctx, addr) }()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	var got []byte
	for attempt := 0; attempt < 50; attempt++ { // until the proxy listens
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/k", bytes.NewReader(body[:1000]))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		got, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	for range 2 { // the same connection again
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/k", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(again, body) {
			t.Fatal("a second request on the connection got other bytes")
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes, want the %d the server sent", len(got), len(body))
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]int64{"80MiB": 80 << 20, "10MB": 10e6, "500k": 500e3, "1234": 1234, "0": 0} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := parseBytes("fast"); err == nil {
		t.Error("parseBytes(fast) accepted")
	}
}
