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

package readers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/cache/generations"
)

// Sessions hold, for each reader, one generation of each Dataset it reads, from its first request
// to its last, as the CSI driver holds one for a pod: a reader never sees two generations of a
// Dataset mixed, whatever refreshes happen meanwhile. A session is a namespace's reader: the session
// its pin token names, else its address. It ends after Idle without a request, or MaxHold after it
// began, so that a long-lived reader moves on to newer data and an old generation's disk is freed.
type Sessions struct {
	Idle, MaxHold time.Duration
	// Indexes reads the object index of each generation a session holds, once: the session keeps it
	// open for its requests (a reader's many ranged GETs open nothing).
	Indexes *s3serve.IndexCache
	// MaxPerNamespace bounds one namespace's sessions: a tenant that opens sessions without end
	// only ends its own oldest idle ones.
	MaxPerNamespace int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	sessions map[sessionKey]*session
}

// Defaults of a Sessions.
const (
	// DefaultCachedIndexes: a node serves many Datasets, each to sessions on one or two generations.
	DefaultCachedIndexes   = 64
	DefaultIdle            = 5 * time.Minute
	DefaultMaxHold         = 6 * time.Hour
	DefaultMaxPerNamespace = 256
)

type sessionKey struct{ namespace, id string }

type session struct {
	started, last time.Time
	inFlight      int
	// held are the generations the session reads, by copy root.
	held map[string]*Held
	// retired were held until their Dataset's source changed; released once no request runs.
	retired []*Held
}

// Held is a generation a session reads: held on disk, its object index open. Requests share it
// (an index is read with ReadAt only); it is released when the session ends, never while a request
// of the session runs.
type Held struct {
	Lease *generations.Lease
	Index s3serve.IndexFile
	// Source is where the generation was copied from (generations.Policy.Source); empty when the
	// generation did not record it.
	Source string
}

// copiedFrom tells whether the generation may be served as source's: it was copied from it, or one
// of the two is not known.
func (h *Held) copiedFrom(source string) bool {
	return source == "" || h.Source == "" || h.Source == source
}

func (h *Held) release() {
	h.Index.Close()
	h.Lease.Release()
}

// ErrTooManySessions says a namespace has as many sessions as it may, all of them busy.
var ErrTooManySessions = errors.New("the namespace has as many reading sessions on this node as it may, all busy")

// ErrPinConflict says a request pins a generation its session does not read.
var ErrPinConflict = errors.New("the pin asks for another generation than its session reads")

// Acquire returns the generation of the copy at root that the session reads, holding it and opening
// its object index on the session's first request that touches the copy: generation want if it is
// not 0, else the current one. done ends the request; the generation stays with the session.
//
// source is the Dataset's source now (Served.Source): a session that holds a generation copied from
// another source moves to the current generation, since the old one's bytes may not be served under
// the new source's keys. The caller still checks the result's Source: the current generation may be
// the old source's until the new one's first sync.
func (s *Sessions) Acquire(namespace, id, root, source string, want int64) (held *Held, done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	key := sessionKey{namespace, id}
	sess := s.sessions[key]
	if sess != nil && now.Sub(sess.started) >= s.maxHold() && sess.inFlight == 0 {
		sess.release()
		delete(s.sessions, key)
		sess = nil
	}
	if sess == nil {
		if err := s.makeRoomLocked(namespace); err != nil {
			return nil, nil, err
		}
		sess = &session{started: now, held: map[string]*Held{}}
		if s.sessions == nil {
			s.sessions = map[sessionKey]*session{}
		}
		s.sessions[key] = sess
	}
	held = sess.held[root]
	if held != nil && want == 0 && !held.copiedFrom(source) {
		sess.retired = append(sess.retired, held)
		delete(sess.held, root)
		held = nil
	}
	if held != nil && want != 0 && held.Lease.Generation != want {
		return nil, nil, fmt.Errorf("%w: it reads generation %d of the Dataset; a pin for generation %d needs a session of its own (s=)", ErrPinConflict, held.Lease.Generation, want)
	}
	if held == nil {
		// Holding takes a shared flock and reads a link; the index's marks are read once per
		// generation (IndexCache): no per-object work under the lock.
		if held, err = s.hold(root, want); err != nil {
			return nil, nil, err
		}
		sess.held[root] = held
	}
	sess.inFlight++
	sess.last = now
	return held, func() { s.done(sess) }, nil
}

// hold holds generation want (0: the current one) of root and opens its object index.
func (s *Sessions) hold(root string, want int64) (*Held, error) {
	lease, err := generations.Hold(root, want)
	if err != nil {
		return nil, err
	}
	if s.Indexes == nil { // under s.mu, as every call of hold
		s.Indexes = &s3serve.IndexCache{Max: DefaultCachedIndexes}
	}
	source, err := generations.SourceOf(root, lease.Generation)
	if err != nil {
		lease.Release()
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	idx, err := s.Indexes.Open(root, lease.Generation)
	if err != nil {
		lease.Release()
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return &Held{Lease: lease, Index: idx, Source: source}, nil
}

// ErrUnreadable says a held generation's record or object index could not be read.
var ErrUnreadable = errors.New("the copy's object index is not readable")

func (s *Sessions) done(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.inFlight--
	sess.last = s.now()
	if sess.inFlight == 0 {
		sess.releaseRetired()
	}
}

// makeRoomLocked ends the namespace's least recently used idle session when it has as many as it
// may.
func (s *Sessions) makeRoomLocked(namespace string) error {
	var (
		oldest    sessionKey
		oldestAt  time.Time
		n         int
		evictable bool
	)
	for k, sess := range s.sessions {
		if k.namespace != namespace {
			continue
		}
		n++
		if sess.inFlight == 0 && (!evictable || sess.last.Before(oldestAt)) {
			oldest, oldestAt, evictable = k, sess.last, true
		}
	}
	if n < s.maxPerNamespace() {
		return nil
	}
	if !evictable {
		return ErrTooManySessions
	}
	s.sessions[oldest].release()
	delete(s.sessions, oldest)
	return nil
}

// Sweep ends the sessions idle for Idle, or begun MaxHold ago, that have no request in flight.
func (s *Sessions) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, sess := range s.sessions {
		if sess.inFlight == 0 && (now.Sub(sess.last) >= s.idle() || now.Sub(sess.started) >= s.maxHold()) {
			sess.release()
			delete(s.sessions, k)
		}
	}
}

// Run sweeps every interval until ctx ends, then ends every session.
func (s *Sessions) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.closeAll()
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

func (s *Sessions) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sess := range s.sessions {
		sess.release()
		delete(s.sessions, k)
	}
}

// Roots are the copy roots some session reads: a copy the node no longer keeps is not removed
// while a reader reads it.
func (s *Sessions) Roots() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	roots := map[string]bool{}
	for _, sess := range s.sessions {
		for root := range sess.held {
			roots[root] = true
		}
	}
	return roots
}

// Len is how many sessions are open.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// PerNamespace is how many sessions each namespace has open.
func (s *Sessions) PerNamespace() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for key := range s.sessions {
		out[key.namespace]++
	}
	return out
}

func (sess *session) release() {
	for _, h := range sess.held {
		h.release()
	}
	sess.releaseRetired()
}

func (sess *session) releaseRetired() {
	for _, h := range sess.retired {
		h.release()
	}
	sess.retired = nil
}

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sessions) idle() time.Duration {
	if s.Idle > 0 {
		return s.Idle
	}
	return DefaultIdle
}

func (s *Sessions) maxHold() time.Duration {
	if s.MaxHold > 0 {
		return s.MaxHold
	}
	return DefaultMaxHold
}

func (s *Sessions) maxPerNamespace() int {
	if s.MaxPerNamespace > 0 {
		return s.MaxPerNamespace
	}
	return DefaultMaxPerNamespace
}
