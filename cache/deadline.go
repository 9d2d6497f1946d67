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

package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// The defaults of Deadline (docs/sync.md, "Deadlines"). A node agent runs every tenant's syncs with
// one budget of transfer slots, and a sync holds its slots until it ends: an endpoint that answers
// slowly enough never trips a client timeout, yet without a deadline it would hold them for ever.
const (
	// DefaultListDeadline bounds the listing: S3 answers a page of 1,000 keys in some 50-300 ms, so 30
	// minutes lists some six million keys even at the slow end, three times the largest prefix pqcache
	// is measured with.
	DefaultListDeadline = 30 * time.Minute
	// DefaultTransferFloor is the least time the copies get, however few their bytes: room for
	// retries, backoff and a slow start.
	DefaultTransferFloor = 15 * time.Minute
	// DefaultMinBytesPerSecond is the slowest average rate a sync may copy at: 2 MiB/s (16 Mbit/s),
	// a hundredth of what one node reads from S3 here, so that only an endpoint that trickles, not a
	// busy one, runs out of time. 100 GiB get some 14 hours.
	DefaultMinBytesPerSecond = 2 << 20
)

// ErrSyncDeadline marks a sync stopped at its deadline (wire.ReasonSyncDeadlineExceeded). It
// published nothing more: the last good copy stays, and the next sync starts again.
var ErrSyncDeadline = errors.New("the sync ran past its deadline")

// Deadline bounds a sync's time in two phases: the listing gets List from the sync's start; once it
// has ended, the copies (and the commit) get max(TransferFloor, bytes to copy / MinBytesPerSecond).
// Zero fields take the defaults; a negative List or TransferFloor turns the deadline off.
type Deadline struct {
	List              time.Duration
	TransferFloor     time.Duration
	MinBytesPerSecond int64
}

func (d Deadline) withDefaults() Deadline {
	if d.List == 0 {
		d.List = DefaultListDeadline
	}
	if d.TransferFloor == 0 {
		d.TransferFloor = DefaultTransferFloor
	}
	if d.MinBytesPerSecond <= 0 {
		d.MinBytesPerSecond = DefaultMinBytesPerSecond
	}
	return d
}

// Transfer is how long copying need bytes may take.
func (d Deadline) Transfer(need int64) time.Duration {
	d = d.withDefaults()
	secs := float64(max(need, 0)) / float64(d.MinBytesPerSecond)
	if secs >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return max(d.TransferFloor, time.Duration(secs*float64(time.Second)))
}

// deadline is a running sync's: a timer that aborts the sync with ErrSyncDeadline.
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer
	abort func(error)
}

// start (re)arms the deadline: after d, the sync is aborted with an error that says what took too
// long. A negative d disarms it.
func (dl *deadline) start(d time.Duration, what string) {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if dl.timer != nil {
		dl.timer.Stop()
		dl.timer = nil
	}
	if d < 0 {
		return
	}
	dl.timer = time.AfterFunc(d, func() {
		dl.abort(fmt.Errorf("%w: %s took longer than %s", ErrSyncDeadline, what, d))
	})
}

func (dl *deadline) stop() { dl.start(-1, "") }

// startListDeadline arms the listing's deadline (run, at the start).
func (s *syncer) startListDeadline() {
	d := s.opts.Deadline.withDefaults()
	s.deadline = &deadline{abort: s.abort}
	if d.List > 0 {
		s.deadline.start(d.List, "the listing")
	} else {
		s.deadline.start(-1, "")
	}
}

// startTransferDeadline arms the copies' deadline once the listing has ended and need, the bytes to
// copy, is known.
func (s *syncer) startTransferDeadline(need int64) {
	d := s.opts.Deadline.withDefaults()
	if s.deadline == nil {
		return
	}
	if d.TransferFloor < 0 {
		s.deadline.stop()
		return
	}
	s.deadline.start(d.Transfer(need), fmt.Sprintf("copying %d bytes (at least %d bytes/s, or %s)", need, d.MinBytesPerSecond, d.TransferFloor))
}

// deadlineOr returns why the sync's context ended, when the sync itself ended it (abort: its
// deadline, a panic, a full volume, a refused listing): the error a cancelled request returns
// ("context canceled") does not say why, and whichever part of the sync noticed the cancellation
// first must not decide the sync's reason. A context cancelled from outside (the process told to
// stop) has no cause of its own, and err stands.
func deadlineOr(cause, err error) error {
	if err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
