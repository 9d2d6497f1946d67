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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// Timeout bounds one exchange, on both ends: a locate is a few cache reads.
const Timeout = 5 * time.Second

// maxConns bounds the connections the agent serves at once; kubelet publishes one volume at a
// time through the driver, so more means a confused or hostile caller.
const maxConns = 8

// Handler answers the mount side: the agent.
type Handler interface {
	// Locate finds this node's copy of namespace/dataset; a refusal is a Response with a Code.
	Locate(ctx context.Context, namespace, dataset string, generation int64) Response
	// InUse records the copies that published volumes show.
	InUse(dirs []string)
}

// Server serves Handler on a Unix socket, as a manager runnable of the agent.
type Server struct {
	// Path is the socket, in a directory only the pod's two containers share (an emptyDir).
	Path    string
	Handler Handler
	Log     *slog.Logger
}

// Start listens until ctx ends, replacing a socket an earlier agent left.
func (s *Server) Start(ctx context.Context) error {
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the old socket %s: %w", s.Path, err)
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "unix", s.Path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Path, err)
	}
	return s.Serve(ctx, l)
}

// NeedLeaderElection is false: each node's agent answers its own mount container.
func (*Server) NeedLeaderElection() bool { return false }

// Serve answers on l until ctx ends, each connection under Timeout, at most maxConns at once.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = l.Close() }) // Accept returns once the listener closes
	defer stop()
	slots := make(chan struct{}, maxConns)
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting on %s: %w", s.Path, err)
		}
		select {
		case slots <- struct{}{}:
		default:
			_ = conn.Close() // over the bound: the caller retries
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.serveConn(ctx, conn)
		})
	}
}

// serveConn reads one request and writes one response, all within Timeout.
func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	defer func() { _ = conn.Close() }() // the response was written or the exchange failed: nothing to keep
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return
	}
	b, err := ReadMessage(conn, MaxRequestBytes)
	if err != nil {
		s.Log.Warn("Refused a request on the mount socket", "error", err)
		return
	}
	req, err := DecodeRequest(b)
	if err != nil {
		s.Log.Warn("Refused a request on the mount socket", "error", err)
		_ = WriteMessage(conn, Response{Code: 3, Message: err.Error()}, MaxResponseBytes) // 3: InvalidArgument
		return
	}
	var resp Response
	switch req.Op {
	case OpLocate:
		resp = s.Handler.Locate(ctx, req.Namespace, req.Dataset, req.Generation)
	case OpInUse:
		s.Handler.InUse(req.Dirs)
	}
	if err := WriteMessage(conn, resp, MaxResponseBytes); err != nil {
		s.Log.Warn("Answering on the mount socket", "error", err)
	}
}

// Client is the mount side's end.
type Client struct {
	// Path is the agent's socket.
	Path string
	// Timeout bounds one exchange; Timeout (the package's) when zero.
	Timeout time.Duration
}

// Locate asks for this node's copy of namespace/dataset. The answer is validated for shape only;
// the caller confines Dir to its cache root.
func (c *Client) Locate(ctx context.Context, namespace, dataset string, generation int64) (Response, error) {
	resp, err := c.exchange(ctx, Request{Op: OpLocate, Namespace: namespace, Dataset: dataset, Generation: generation})
	if err == nil && resp.Code == 0 && resp.Dir == "" {
		err = errors.New("the agent's answer names no directory")
	}
	return resp, err
}

// ReportInUse tells the agent which copies published volumes show.
func (c *Client) ReportInUse(ctx context.Context, dirs []string) error {
	resp, err := c.exchange(ctx, Request{Op: OpInUse, Dirs: dirs})
	if err == nil && resp.Code != 0 {
		err = fmt.Errorf("the agent refused the report: %s", resp.Message)
	}
	return err
}

func (c *Client) exchange(ctx context.Context, req Request) (Response, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.Path)
	if err != nil {
		return Response{}, fmt.Errorf("reaching the agent at %s: %w", c.Path, err)
	}
	defer func() { _ = conn.Close() }() // one exchange per connection; its errors are reported below
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return Response{}, err
	}
	if err := WriteMessage(conn, req, MaxRequestBytes); err != nil {
		return Response{}, fmt.Errorf("asking the agent: %w", err)
	}
	b, err := ReadMessage(conn, MaxResponseBytes)
	if err != nil {
		return Response{}, fmt.Errorf("reading the agent's answer: %w", err)
	}
	resp, err := DecodeResponse(b)
	if err != nil {
		return Response{}, fmt.Errorf("the agent's answer: %w", err)
	}
	return resp, nil
}
