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

package agent

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// PeerServer serves this node's copies to the other agents, as a manager runnable: it stops with
// the agent.
type PeerServer struct {
	Listener net.Listener
	// Server is the peer endpoint (a *peer.Server; tests wrap it).
	Server http.Handler
	// Timeouts, zero fields defaulting to DefaultServerTimeouts' (tests shorten them).
	Timeouts ServerTimeouts
	// TLS, when set, is the only way in: a plain-HTTP request fails its handshake and is answered
	// 400 without reaching Server (agent/peer/peertls.ServerConfig between node agents).
	TLS *tls.Config
}

// ServerTimeouts bound how long a client may take to send its request, and to idle between two.
type ServerTimeouts struct {
	ReadHeader, Read, Idle time.Duration
}

// DefaultServerTimeouts are the peer server's. Peer requests are GET and HEAD, with no body: a
// client has Read to send one whole.
var DefaultServerTimeouts = ServerTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Idle: 2 * time.Minute}

// Start serves the peer endpoint on Listener until ctx ends, then shuts the server down, giving the
// requests in flight five seconds to finish: a follower mid-copy gets its file rather than a reset.
func (p PeerServer) Start(ctx context.Context) error {
	t := p.Timeouts
	d := DefaultServerTimeouts
	// No WriteTimeout: a response is a whole object, which may take long to stream to a follower;
	// the follower's own timeouts and the request's context end a stuck one.
	hs := &http.Server{Handler: p.Server, ReadHeaderTimeout: cmp.Or(t.ReadHeader, d.ReadHeader),
		ReadTimeout: cmp.Or(t.Read, d.Read), IdleTimeout: cmp.Or(t.Idle, d.Idle)}
	go func() {
		<-ctx.Done()
		// ctx is done by now: the grace period keeps its values but not its cancellation.
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
	}()
	l := p.Listener
	if p.TLS != nil {
		l = tls.NewListener(l, p.TLS)
	}
	if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection is false: every agent serves, on its own node.
func (PeerServer) NeedLeaderElection() bool { return false }
