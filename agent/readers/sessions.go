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

	"github.com/pqcache/pqcache/cache/generations"
)

// Sessions hold, for each reader, one generation of each Dataset it reads, from its first request
// to its last, as the CSI driver holds one for a pod: a reader never sees two generations of a
// Dataset mixed, whatever refreshes happen meanwhile. A session is a namespace's reader: the session
// its pin token names, else its address. It ends after Idle without a request, or MaxHold after it
// began, so that a long-lived reader moves on to newer data and an old generation's disk is freed.
type Sessions struct {
	Idle, MaxHold time.Duration
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
	DefaultIdle            = 5 * time.Minute
	DefaultMaxHold         = 6 * time.Hour
	DefaultMaxPerNamespace = 256
)

type sessionKey struct{ namespace, id string }

type session struct {
	started, last time.Time
	inFlight      int
	// held are the generations the session reads, by copy root.
	held map[string]*generations.Lease
}

// ErrTooManySessions says a namespace has as many sessions as it may, all of them busy.
var ErrTooManySessions = errors.New("the namespace has as many reading sessions on this node as it may, all busy")

// ErrPinConflict says a request pins a generation its session does not read.
var ErrPinConflict = errors.New("the pin asks for another generation than its session reads")

// Acquire returns the generation of the copy at root that the session reads, holding it on the
// session's first request that touches the copy: generation want if it is not 0, else the current
// one. done ends the request; the lease stays with the session.
func (s *Sessions) Acquire(namespace, id, root string, want int64) (lease *generations.Lease, done func(), err error) {
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
		sess = &session{started: now, held: map[string]*generations.Lease{}}
		if s.sessions == nil {
			s.sessions = map[sessionKey]*session{}
		}
		s.sessions[key] = sess
	}
	lease = sess.held[root]
	if lease != nil && want != 0 && lease.Generation != want {
		return nil, nil, fmt.Errorf("%w: it reads generation %d of the Dataset; a pin for generation %d needs a session of its own (s=)", ErrPinConflict, lease.Generation, want)
	}
	if lease == nil {
		// Holding takes a shared flock and reads a link: no I/O on file contents, fine under the lock.
		if lease, err = generations.Hold(root, want); err != nil {
			return nil, nil, err
		}
		sess.held[root] = lease
	}
	sess.inFlight++
	sess.last = now
	return lease, func() { s.done(sess) }, nil
}

func (s *Sessions) done(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.inFlight--
	sess.last = s.now()
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

func (sess *session) release() {
	for _, l := range sess.held {
		l.Release()
	}
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
