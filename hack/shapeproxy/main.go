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

// Command shapeproxy is a TCP proxy that makes a loopback or in-cluster S3 server behave like a bucket
// in a region: every request waits a round trip (-latency) before it reaches the server, and each
// connection's responses flow at most at -rate bytes per second (S3 serves one GET stream at tens of
// MB/s, however fast the client). Benchmarks of the s3 input paths use it so that the comparison with
// the cache volume is not one between a disk and loopback. It shapes; it inspects nothing.
//
//	shapeproxy -listen :7071 -upstream versitygw.demo.svc.cluster.local:7070 -latency 20ms -rate 80MiB
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:7071", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:7070", "host:port of the server")
	latency := flag.Duration("latency", 20*time.Millisecond, "delay before each request reaches the server (one round trip)")
	rate := flag.String("rate", "80MiB", "bytes per second per connection from the server (0: unlimited)")
	flag.Parse()
	bps, err := parseBytes(*rate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shapeproxy:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &proxy{upstream: *upstream, latency: *latency, rate: bps, log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := p.serve(ctx, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "shapeproxy:", err)
		os.Exit(1)
	}
}

// parseBytes reads 80MiB, 10MB, 500k, 1234.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"k", 1e3}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("rate %q: want a size such as 80MiB", s)
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("rate %q: want a size such as 80MiB", s)
	}
	return v, nil
}

type proxy struct {
	upstream string
	latency  time.Duration
	rate     int64
	log      *slog.Logger
}

// serve accepts connections until ctx ends, and waits for the ones in flight.
func (p *proxy) serve(ctx context.Context, addr string) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	p.log.Info("Shaping", "listen", l.Addr().String(), "upstream", p.upstream, "latency", p.latency, "bytesPerSecond", p.rate)
	go func() { <-ctx.Done(); _ = l.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Go(func() { p.handle(ctx, c) })
	}
}

// handle relays one client connection to a new one to the upstream, shaped, until both directions end
// or ctx does. Closing a connection's descriptor cannot lose data: what was written is in flight.
func (p *proxy) handle(ctx context.Context, client net.Conn) {
	defer func() { _ = client.Close() }()
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		p.log.Warn("Upstream unreachable", "error", err)
		return
	}
	defer func() { _ = server.Close() }()
	// Stopping the proxy ends kept-alive connections too.
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			_ = client.Close()
			_ = server.Close()
		case <-stopped:
		}
	}()
	done := make(chan struct{}, 2)
	go func() { p.requests(client, server); closeWrite(server); done <- struct{}{} }()
	go func() { p.responses(server, client); closeWrite(client); done <- struct{}{} }()
	<-done
	<-done
}

// requests forwards what the client sends, holding back each burst that follows a pause (a new
// request on a kept-alive connection) by the latency.
func (p *proxy) requests(from, to net.Conn) {
	buf := make([]byte, 64<<10)
	var last time.Time
	for {
		n, err := from.Read(buf)
		if n > 0 {
			if time.Since(last) > time.Millisecond && p.latency > 0 {
				time.Sleep(p.latency)
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
			last = time.Now()
		}
		if err != nil {
			return
		}
	}
}

// responses forwards what the server sends at no more than the rate: a token bucket refilled every
// 10 ms, so that the stream is smooth at the scale of a GET.
func (p *proxy) responses(from, to net.Conn) {
	if p.rate <= 0 {
		_, _ = io.Copy(to, from)
		return
	}
	const tick = 10 * time.Millisecond
	perTick := max(p.rate/int64(time.Second/tick), 1)
	buf := make([]byte, min(perTick, 256<<10))
	budget, refilled := perTick, time.Now()
	for {
		if budget <= 0 {
			time.Sleep(time.Until(refilled.Add(tick)))
			budget, refilled = perTick, time.Now()
		}
		n, err := from.Read(buf[:min(int64(len(buf)), budget)])
		if n > 0 {
			budget -= int64(n)
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
