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

// Package hostiles3 is an S3 endpoint for tests that misbehaves on demand. pqcache reads from
// endpoints its users choose, so every way an endpoint can break the protocol (an endless body, a
// slowloris, a wrong Content-Length, a redirect loop, a 5xx storm, a listing that never ends...)
// must end a sync with a clear reason and leave the last good copy and the process alone; this server
// is how the tests (cache/, agent/, and the e2e suite, which runs it as a pod with the hidden
// `pqcache-testkit hostile-s3`) produce each of them.
//
// It keeps objects in memory and serves path-style ListObjectsV2, HeadObject, GetObject and
// PutObject, with any credentials or none (it checks no signature). Each bucket is well-behaved
// until Set switches it, or one kind of its requests, to a Behaviour. It is not part of pqcache's
// product: nothing but tests and that hidden command imports it.
package hostiles3

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Op is a kind of request a Behaviour applies to.
type Op string

// The kinds of requests.
const (
	OpAny  Op = ""
	OpList Op = "list"
	OpGet  Op = "get"
	OpHead Op = "head"
)

// Rule is how a bucket answers: Behaviour for requests of kind Op (OpAny: every request but a PUT),
// good answers for the others.
type Rule struct {
	Behaviour Behaviour
	Op        Op
}

// Stats count what the server did.
type Stats struct {
	// Requests answered with a bad behaviour, and answered well.
	Hostile, Good atomic.Int64
	// BodyBytes written in bad answers' bodies.
	BodyBytes atomic.Int64
	// Away counts requests that reached the server under another host name than its own: a client
	// that followed a redirect to another host.
	Away atomic.Int64
}

// object is one stored object.
type object struct {
	data     []byte
	etag     string
	modified time.Time
}

// Server is the endpoint. Its zero value is not usable: call New.
type Server struct {
	// Interval is the pause between the bytes of a slowloris answer (default a second).
	Interval time.Duration
	// EndlessLimit bounds an endless body, in bytes (default 1 GiB): a client that reads it whole
	// still ends.
	EndlessLimit int64
	// HugeBytes is the size of a huge listing document (default 100 MiB).
	HugeBytes int64
	// MaxHold bounds how long a request is held without an answer (default 10 minutes).
	MaxHold time.Duration

	Stats Stats

	mu      sync.Mutex
	buckets map[string]map[string]object
	rules   map[string]Rule
	done    chan struct{}
	once    sync.Once
	srv     *http.Server
	url     string
	host    string
}

// New returns a server with no bucket that listens nowhere yet (see Start, or serve it with
// ServeHTTP).
func New() *Server {
	return &Server{Interval: time.Second, EndlessLimit: 1 << 30, HugeBytes: 100 << 20, MaxHold: 10 * time.Minute,
		buckets: map[string]map[string]object{}, rules: map[string]Rule{}, done: make(chan struct{})}
}

// Start returns a server listening on 127.0.0.1 (an ephemeral port), and only there.
func Start() (*Server, error) {
	s := New()
	if err := s.Listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

// Listen serves on addr until Close.
func (s *Server) Listen(addr string) error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	s.host = l.Addr().String()
	s.url = "http://" + s.host
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return nil
}

// URL is the endpoint's base URL, path-style (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.url }

// Close stops every answer in progress (slow, endless or held ones included) and the listener.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	if s.srv != nil {
		_ = s.srv.Close() // every connection at once: a test's client may hold some that never sent a request
	}
}

// Put stores an object (creating its bucket), as a PutObject would.
func (s *Server) Put(bucket, key string, data []byte) {
	sum := md5.Sum(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buckets[bucket] == nil {
		s.buckets[bucket] = map[string]object{}
	}
	s.buckets[bucket][key] = object{data: append([]byte(nil), data...), etag: `"` + hex.EncodeToString(sum[:]) + `"`,
		modified: time.Now().UTC().Truncate(time.Second)}
}

// Set makes bucket answer by r from now on; Rule{} (Good) makes it well-behaved again.
func (s *Server) Set(bucket string, r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[bucket] = r
}

// ServeHTTP answers one request: the control API under /_hostile/, else S3.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.host != "" && r.Host != s.host {
		s.Stats.Away.Add(1)
	}
	if strings.HasPrefix(r.URL.Path, controlPath) {
		s.control(w, r)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if r.Method == http.MethodPut {
		s.put(w, r, bucket, key)
		return
	}
	op := opOf(r, key)
	s.mu.Lock()
	rule := s.rules[bucket]
	s.mu.Unlock()
	if rule.Behaviour != Good && (rule.Op == OpAny || rule.Op == op) {
		s.Stats.Hostile.Add(1)
		s.misbehave(w, r, rule.Behaviour, bucket, key, op)
		return
	}
	s.Stats.Good.Add(1)
	s.serveGood(w, r, bucket, key, op)
}

func opOf(r *http.Request, key string) Op {
	switch {
	case r.Method == http.MethodHead:
		return OpHead
	case key == "" && r.URL.Query().Has("list-type"):
		return OpList
	case key != "":
		return OpGet
	}
	return OpAny
}

// serveGood answers as S3 would.
func (s *Server) serveGood(w http.ResponseWriter, r *http.Request, bucket, key string, op Op) {
	switch op {
	case OpList:
		doc, err := s.listing(bucket, r.URL.Query())
		if err != nil {
			s3Error(w, http.StatusNotFound, "NoSuchBucket", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(doc)
	case OpGet, OpHead:
		o, ok := s.object(bucket, key)
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", "no such key")
			return
		}
		serveObject(w, r, o, o.data)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", r.Method+" "+r.URL.String())
	}
}

// Object returns what the bucket holds under key.
func (s *Server) Object(bucket, key string) ([]byte, bool) {
	o, ok := s.object(bucket, key)
	return o.data, ok
}

func (s *Server) object(bucket, key string) (object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.buckets[bucket][key]
	return o, ok
}

// keys returns bucket's keys under prefix, sorted, or an error when there is no such bucket.
func (s *Server) keys(bucket, prefix string) ([]string, map[string]object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.buckets[bucket]
	if !ok {
		return nil, nil, fmt.Errorf("no bucket %q", bucket)
	}
	var keys []string
	snap := map[string]object{}
	for k, o := range objs {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
			snap[k] = o
		}
	}
	sort.Strings(keys)
	return keys, snap, nil
}

// put stores a PutObject's body, or creates a bucket.
func (s *Server) put(w http.ResponseWriter, r *http.Request, bucket, key string) {
	if key == "" {
		s.mu.Lock()
		if s.buckets[bucket] == nil {
			s.buckets[bucket] = map[string]object{}
		}
		s.mu.Unlock()
		return
	}
	// Objects live in memory: an upload over maxPutBytes is refused whole, never kept cut short.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPutBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		s3Error(w, http.StatusRequestEntityTooLarge, "EntityTooLarge", fmt.Sprintf("an object here is at most %d bytes", maxPutBytes))
		return
	}
	if err != nil {
		s3Error(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	s.Put(bucket, key, data)
	o, _ := s.object(bucket, key)
	w.Header().Set("ETag", o.etag)
}

// maxPutBytes is the largest object a PUT may store (they are held in memory).
const maxPutBytes = 64 << 20

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, xmlText(msg))
}

// hold waits until the client goes, the server closes, or MaxHold passes; it says whether to go on.
func (s *Server) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	case <-t.C:
		return true
	}
}

// errClosed: the server closed, or the client went, while an answer was being written.
var errClosed = errors.New("answer ended")
