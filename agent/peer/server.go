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

// Package peer serves a node's published generations to the node agents of other nodes as a
// read-only S3-compatible endpoint, so that a follower fills its copy with the same sync engine it
// would use against the bucket: ListObjectsV2, HeadObject and GetObject (byte ranges and upload
// parts), with the ETags, checksums and LastModified the bucket gave the seed. A follower's manifest
// then comes out equal to the seed's, and every byte it copies is checked against what the bucket
// vouched for, not against what the peer says.
//
// Addressing is path style. A bucket is one cache root (Server.Roots maps names to roots); a key is
// "<generation>/<key in the generation>". Every request holds its generation (generations.Hold) while
// it runs, so the seed's collector never removes a tree under a transfer; a generation that is gone
// answers 410 NoSuchGeneration, which a follower takes as a reason to fall back, never as a deleted
// object. Each request is authenticated by Server.Auth: between node agents, by the calling agent's
// own short-lived ServiceAccount token over TLS (agent/peer/identity, agent/peer/peertls); for the
// standalone `pqcache peer serve`, by AWS Signature Version 4 against a Key. Server.Authorize then
// decides whether that caller may read the Dataset asked for.
package peer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/cache/generations"
)

// Server is the peer endpoint. Its zero value serves nothing; set Roots and Auth.
type Server struct {
	// Roots maps a bucket name to the cache root it serves; ok is false for an unknown bucket.
	Roots func(bucket string) (root string, ok bool)
	// Auth establishes who sent each request; a request it refuses gets 403.
	Auth Authenticator
	// Authorize, when set, says whether caller may read bucket (a node agent serves a Dataset only to
	// the nodes its plan names); a refusal gets 403 AccessDenied.
	Authorize func(ctx context.Context, caller Caller, bucket string) error
	// MaxClients bounds how many followers (by remote address) are served at once; others get 503
	// SlowDown. 0 means DefaultMaxClients.
	MaxClients int
	// Log receives structured logs; nil discards them.
	Log *slog.Logger

	indexes  s3serve.IndexCache
	clients  clientLimit
	refusals s3serve.RefusalLog
}

// refused logs a refused request (agent/s3serve.RefusalLog: the peer port is open to the node
// network, so refusals are summed up, not logged one by one).
func (s *Server) refused(r *http.Request, err error) {
	s.refusals.Refused(s.log(), r, err, "peer requests")
}

// DefaultMaxClients is how many followers one replica serves at once: filling N nodes then takes
// about log base (1+K) of N rounds.
const DefaultMaxClients = 2

// Region is the region peers sign for.
const Region = "pqcache"

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// ServeHTTP answers one S3 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s3serve.WriteError(w, r, http.StatusMethodNotAllowed, "MethodNotAllowed", "a peer is read-only")
		return
	}
	caller, err := s.authenticate(r)
	if err != nil {
		s.refused(r, err)
		s3serve.WriteError(w, r, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
		return
	}
	release, ok := s.clients.admit(r.RemoteAddr, s.maxClients())
	if !ok {
		s3serve.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", "this peer serves as many followers as it may")
		return
	}
	defer release()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	root, ok := s.Roots(bucket)
	if bucket == "" || !ok {
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchBucket", "no such dataset on this node")
		return
	}
	if s.Authorize != nil {
		if err := s.Authorize(r.Context(), caller, bucket); err != nil {
			s.refused(r, err)
			s3serve.WriteError(w, r, http.StatusForbidden, "AccessDenied", err.Error())
			return
		}
	}
	if key == "" {
		if r.Method != http.MethodGet || r.URL.Query().Get("list-type") != "2" {
			s3serve.WriteError(w, r, http.StatusNotImplemented, "NotImplemented", "a peer lists with ListObjectsV2 only")
			return
		}
		s.list(w, r, bucket, root)
		return
	}
	if s.serveManifest(w, r, root, key) {
		return
	}
	s.object(w, r, root, key)
}

// authenticate runs Auth; a Server without one refuses every request.
func (s *Server) authenticate(r *http.Request) (Caller, error) {
	if s.Auth == nil {
		return Caller{}, errors.New("this peer has no way to check requests")
	}
	return s.Auth.Authenticate(r)
}

func (s *Server) maxClients() int {
	if s.MaxClients > 0 {
		return s.MaxClients
	}
	return DefaultMaxClients
}

// hold holds generation g of root and opens its object index, or answers why it cannot. The caller
// closes the index and releases the lease.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, root string, g int64) (*generations.Lease, s3serve.IndexFile, bool) {
	lease, err := generations.Hold(root, g)
	if err != nil {
		status, code := http.StatusInternalServerError, "InternalError"
		if errors.Is(err, fs.ErrNotExist) {
			status, code = http.StatusGone, "NoSuchGeneration"
			s.indexes.Forget(root, g)
		}
		s3serve.WriteError(w, r, status, code, fmt.Sprintf("generation %d: %v", g, err))
		return nil, s3serve.IndexFile{}, false
	}
	idx, err := s.indexes.Open(root, g)
	if err != nil {
		lease.Release()
		status, code := http.StatusInternalServerError, "InternalError"
		if errors.Is(err, generations.ErrNotIndexed) {
			status, code = http.StatusGone, "NoSuchGeneration"
		}
		s3serve.WriteError(w, r, status, code, err.Error())
		return nil, s3serve.IndexFile{}, false
	}
	return lease, idx, true
}

// splitGeneration splits "<generation>/<rest>".
func splitGeneration(key string) (int64, string, bool) {
	head, rest, _ := strings.Cut(key, "/")
	g, err := strconv.ParseInt(head, 10, 64)
	if err != nil || g <= 0 || strconv.FormatInt(g, 10) != head {
		return 0, "", false
	}
	return g, rest, true
}

// clientLimit counts requests in flight by remote host, and admits a new host only while fewer than
// the limit have requests in flight.
type clientLimit struct {
	mu     sync.Mutex
	active map[string]int
}

func (c *clientLimit) admit(remote string, limit int) (release func(), ok bool) {
	host := remote
	if i := strings.LastIndexByte(remote, ':'); i > 0 {
		host = remote[:i]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active == nil {
		c.active = map[string]int{}
	}
	if c.active[host] == 0 && len(c.active) >= limit {
		return nil, false
	}
	c.active[host]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.active[host]--; c.active[host] == 0 {
			delete(c.active, host)
		}
	}, true
}
