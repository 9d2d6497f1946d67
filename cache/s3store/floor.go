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

package s3store

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// ErrSourceTooSlow marks a response body that a store sends too slowly to be an answer: fewer than
// BodyFloor.Bytes in a BodyFloor.Window while the reader waited for them. A store that trickles a
// byte every few seconds never trips a client timeout, and without this would hold a transfer slot
// until the sync's deadline (a quarter of an hour at least); the sync fails with
// wire.ReasonSourceTooSlow instead, within a minute or so.
var ErrSourceTooSlow = errors.New("the store sends too slowly")

// BodyFloor is the least a response body must deliver: Bytes in every Window during which the
// reader spent at least half the window waiting in Read (a reader busy elsewhere is not the store's
// doing). Zero fields take DefaultBodyFloor's; a negative Window turns the floor off.
type BodyFloor struct {
	Window time.Duration
	Bytes  int64
}

// DefaultBodyFloor is 1 MiB a minute (about 17 KiB/s): a hundredth of the sync's own floor of
// 2 MiB/s, so that only a store that trickles, never a slow link, falls under it.
var DefaultBodyFloor = BodyFloor{Window: time.Minute, Bytes: 1 << 20}

func (f BodyFloor) withDefaults() BodyFloor {
	if f.Window == 0 {
		f.Window = DefaultBodyFloor.Window
	}
	if f.Bytes <= 0 {
		f.Bytes = DefaultBodyFloor.Bytes
	}
	return f
}

// floorBody is a response body held to a BodyFloor: a timer checks each window, and closes the body
// under the floor, which ends a Read blocked on it; that Read returns ErrSourceTooSlow.
type floorBody struct {
	io.ReadCloser
	floor BodyFloor
	timer *time.Timer

	mu        sync.Mutex
	got       int64         // bytes read in the current window
	waited    time.Duration // time spent in Read in the current window, but for a Read still blocked
	readSince time.Time     // when the Read now blocked began; zero between Reads
	windowAt  time.Time
	slow      error
}

// floored holds body to f, unless f is off.
func floored(body io.ReadCloser, f BodyFloor) io.ReadCloser {
	f = f.withDefaults()
	if body == nil || f.Window < 0 {
		return body
	}
	b := &floorBody{ReadCloser: body, floor: f, windowAt: time.Now()}
	b.timer = time.AfterFunc(f.Window, b.check)
	return b
}

// check ends a window: a store that sent less than the floor while it was waited for is too slow.
func (b *floorBody) check() {
	b.mu.Lock()
	now := time.Now()
	waited := b.waited
	if !b.readSince.IsZero() {
		waited += now.Sub(b.readSince)
		b.readSince = now
	}
	window := now.Sub(b.windowAt)
	slow := b.got < b.floor.Bytes && waited >= window/2
	if slow {
		b.slow = fmt.Errorf("%w: %s in %s, under the floor of %s a %s", ErrSourceTooSlow, wire.Bytes(b.got),
			window.Round(time.Second), wire.Bytes(b.floor.Bytes), b.floor.Window)
	}
	b.got, b.waited, b.windowAt = 0, 0, now
	b.mu.Unlock()
	if slow {
		_ = b.ReadCloser.Close() // ends the blocked Read; the reader gets b.slow
		return
	}
	b.timer.Reset(b.floor.Window)
}

// Read reads through, counting the bytes and the time spent waiting for them.
func (b *floorBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.slow != nil {
		err := b.slow
		b.mu.Unlock()
		return 0, err
	}
	b.readSince = time.Now()
	b.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(n)
	b.waited += time.Since(b.readSince)
	b.readSince = time.Time{}
	if err != nil && b.slow != nil {
		return n, b.slow
	}
	return n, err
}

// Close stops the timer and closes the body.
func (b *floorBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}
