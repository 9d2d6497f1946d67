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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
)

// volumeReason returns the reason a failed file operation on the cache volume gives the whole sync,
// by its errno: a full, read-only or failing volume, or one pqcache may not write, fails every later
// file too, so the sync stops. It returns "" for errors that are not about the volume: S3 and network
// errors, and the errors of one path (ENOTDIR, EISDIR, ENAMETOOLONG...), which fail only that file.
func volumeReason(err error) string {
	var (
		pe *fs.PathError
		le *os.LinkError
	)
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		return "" // only file operations: a refused connect(2) is EACCES too
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return ""
	}
	switch errno {
	case syscall.ENOSPC, syscall.EDQUOT:
		return wire.ReasonInsufficientCapacity
	case syscall.EROFS:
		return wire.ReasonVolumeReadOnly
	case syscall.EACCES, syscall.EPERM:
		return wire.ReasonVolumePermissionDenied
	case syscall.EIO:
		return wire.ReasonVolumeIOError
	}
	return ""
}

// reason picks the condition reason a Dataset reports for a failed sync. An S3 error that stops the
// whole sync gives its class when that class is a reason; otherwise the most frequent class among the
// failed files does, when it is one of the reasons a file's failure can give.
func (s *syncer) reason(err error) string {
	if errors.Is(err, ErrSyncDeadline) {
		return wire.ReasonSyncDeadlineExceeded
	}
	switch c := s3store.Classify(err); c {
	case wire.ReasonAccessDenied, wire.ReasonNoSuchBucket, wire.ReasonInvalidCredentials:
		return c
	}
	if errors.Is(err, s3store.ErrSourceMisbehaving) {
		return wire.ReasonSourceMisbehaving
	}
	if errors.Is(err, s3store.ErrSourceTooSlow) {
		return wire.ReasonSourceTooSlow
	}
	if errors.Is(err, s3store.ErrPanicked) {
		return wire.ReasonPanicked
	}
	if errors.Is(err, ErrInsufficientCapacity) {
		return wire.ReasonInsufficientCapacity
	}
	if errors.Is(err, ErrOverByteCap) {
		return wire.ReasonOverByteCap
	}
	if errors.Is(err, ErrNodeReserve) {
		return wire.ReasonNodeReserve
	}
	if errors.Is(err, ErrTableCorrupt) {
		return wire.ReasonTableCorrupt
	}
	if errors.Is(err, ErrTableUnsupported) {
		return wire.ReasonTableUnsupported
	}
	if r := volumeReason(err); r != "" {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The most frequent class among failed files.
	best, n := "", int64(0)
	for c, k := range s.classes {
		if c != "" && k > n {
			best, n = c, k
		}
	}
	switch best {
	case wire.ReasonAccessDenied, wire.ReasonInvalidCredentials, wire.ReasonHostileKeys, wire.ReasonSourceTooSlow, wire.ReasonTableCorrupt:
		return best
	}
	return wire.ReasonSyncFailed
}

// recovered runs fn in the calling goroutine and turns a panic in it (a bug that a store's answers
// reach) into an error wrapping s3store.ErrPanicked, with what it was doing and the stack. Every
// goroutine that a sync starts runs its work through it: a panic would otherwise end the process,
// and a node agent runs every Dataset's syncs in one.
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v\n%s", what, s3store.ErrPanicked, p, debug.Stack())
		}
	}()
	return fn()
}

// publishHook, when set (by tests), is called at the start of every batch the sync publishes.
var publishHook func()
