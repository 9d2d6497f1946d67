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
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAgent answers every locate with dir and records reports.
type fakeAgent struct {
	dir   string
	delay time.Duration
	mu    sync.Mutex
	inUse []string
}

func (f *fakeAgent) Locate(_ context.Context, namespace, dataset string, _ int64) Response {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if dataset == "missing" {
		return Response{Code: 5, Message: "Dataset " + namespace + "/missing not found"}
	}
	return Response{Dir: f.dir, Holders: "nodes with a ready copy: node-1"}
}

func (f *fakeAgent) InUse(dirs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inUse = dirs
}

func dial(t *testing.T, path string) (net.Conn, error) {
	t.Helper()
	return (&net.Dialer{}).DialContext(context.Background(), "unix", path)
}

// serve runs a Server for h on a socket in a temporary directory and returns its path.
func serve(t *testing.T, h Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mount.sock")
	s := &Server{Path: path, Handler: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Start(ctx); err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c, err := dial(t, path); err == nil {
			_ = c.Close()
			return path
		}
	}
	t.Fatalf("%s never listened", path)
	return ""
}

func TestLocateAndReport(t *testing.T) {
	agent := &fakeAgent{dir: "/cache/team-a/events-uid"}
	c := &Client{Path: serve(t, agent)}
	resp, err := c.Locate(context.Background(), "team-a", "events", 0)
	if err != nil || resp.Dir != agent.dir || resp.Code != 0 {
		t.Fatalf("locate: %+v, %v", resp, err)
	}
	resp, err = c.Locate(context.Background(), "team-a", "missing", 0)
	if err != nil || resp.Code != 5 || !strings.Contains(resp.Message, "not found") {
		t.Fatalf("locate of a missing Dataset: %+v, %v", resp, err)
	}
	if err := c.ReportInUse(context.Background(), []string{"/cache/a/b-1", "/cache/c/d-2"}); err != nil {
		t.Fatal(err)
	}
	agent.mu.Lock()
	defer agent.mu.Unlock()
	if len(agent.inUse) != 2 {
		t.Errorf("reported %v", agent.inUse)
	}
}

// TestClientRefusesBadRequests: what the client would send is validated by the server: a namespace
// that is not a DNS label gets InvalidArgument, not a lookup.
func TestServerRefusesInvalidRequests(t *testing.T) {
	c := &Client{Path: serve(t, &fakeAgent{dir: "/cache/x"})}
	for _, ns := range []string{"../etc", "a.b", "", strings.Repeat("a", 64), "Team"} {
		resp, err := c.Locate(context.Background(), ns, "events", 0)
		if err != nil || resp.Code != 3 {
			t.Errorf("namespace %q: %+v, %v; want InvalidArgument", ns, resp, err)
		}
	}
	if err := c.ReportInUse(context.Background(), []string{"relative/dir"}); err == nil {
		t.Error("a relative in-use dir was accepted")
	}
}

// TestOversizeMessagesAreRefused: a length over the cap is refused from the header alone, on both
// sides: the server closes without reading the body, the client refuses an answer over 8 KiB.
func TestOversizeMessagesAreRefused(t *testing.T) {
	path := serve(t, &fakeAgent{dir: "/cache/x"})
	conn, err := dial(t, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if err := binary.Write(conn, binary.BigEndian, uint32(MaxRequestBytes+1)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("oversize request: read %d, %v; want the server to close", n, err)
	}

	big := &fakeAgent{dir: "/" + strings.Repeat("d", MaxResponseBytes)}
	resp, err := (&Client{Path: serve(t, big)}).Locate(context.Background(), "team-a", "events", 0)
	if err == nil {
		t.Errorf("an answer over the cap was accepted: %+v", resp)
	}
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.BigEndian, uint32(MaxResponseBytes+1))
	if _, err := ReadMessage(&buf, MaxResponseBytes); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadMessage of an oversize header: %v", err)
	}
	if err := WriteMessage(io.Discard, Request{Op: OpInUse, Dirs: []string{"/" + strings.Repeat("d", MaxRequestBytes)}}, MaxRequestBytes); !errors.Is(err, ErrTooLarge) {
		t.Errorf("WriteMessage of an oversize request: %v", err)
	}
}

// TestDeadlines: a client that never sends is cut off by the server after Timeout, and an agent that
// never answers costs the client its own timeout, not more.
func TestDeadlines(t *testing.T) {
	slow := &fakeAgent{dir: "/cache/x", delay: 2 * time.Second}
	start := time.Now()
	_, err := (&Client{Path: serve(t, slow), Timeout: 200 * time.Millisecond}).Locate(context.Background(), "team-a", "events", 0)
	if err == nil || time.Since(start) > time.Second {
		t.Errorf("a slow agent: %v after %v; want a timeout after 200ms", err, time.Since(start))
	}

	conn, err := dial(t, serve(t, &fakeAgent{dir: "/cache/x"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, _ = conn.Write([]byte{0, 0}) // half a header, then silence
	_ = conn.SetReadDeadline(time.Now().Add(Timeout + 3*time.Second))
	start = time.Now()
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a silent client: %v; want the server to close", err)
	}
	if took := time.Since(start); took < Timeout-time.Second || took > Timeout+2*time.Second {
		t.Errorf("the server closed a silent client after %v, want about %v", took, Timeout)
	}
}
