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

// Package plan decides what a sync does: it merges the S3 listing with the manifest, both sorted by
// key, into copies and deletes, one object at a time, so the memory it needs does not grow with the
// number of objects. It also decides which keys are safe to publish as local paths. It does no I/O.
package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pqcache/pqcache/cache/manifest"
)

// Object is one listed object, its key relative to the source prefix.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
	ETag         string
	// ChecksumAlgorithm and ChecksumType are the checksum the store keeps for the object, as listed
	// (CRC64NVME, FULL_OBJECT...); empty when the store lists none. They say how the download can be
	// checked (package integrity), and are not part of change detection.
	ChecksumAlgorithm string `json:",omitempty"`
	ChecksumType      string `json:",omitempty"`
}

// Change says why an object must be copied. Any one signal suffices: size-only or time-only
// detection misses rewrites (a same-size rewrite, a rewrite that kept or moved back its LastModified).
type Change string

// The reasons an Action's Why gives: an object with no published file, a listing that differs from
// the published entry in one signal (Compare), a source other than the one the files came from (every
// object is copied again), and an entry whose bytes were never verified.
const (
	ChangeNew          Change = "new"
	ChangeSize         Change = "size"
	ChangeETag         Change = "etag"
	ChangeLastModified Change = "lastModified"
	ChangeSource       Change = "source"
	ChangeUnverified   Change = "unverified"
)

// Compare returns why obj differs from the published entry e, or "" when it does not.
func Compare(obj Object, e manifest.Entry) Change {
	switch {
	case obj.Size != e.Size:
		return ChangeSize
	case obj.ETag != e.ETag:
		return ChangeETag
	case !sameTime(obj.LastModified, e.LastModified):
		return ChangeLastModified
	}
	return ""
}

// sameTime compares LastModified times. A listing may give them to the millisecond, while HEAD and GET
// answer with an HTTP date, to the second: a file published by a targeted sync (from a HEAD) records
// whole seconds. Two times agree when they are equal, or when one has whole seconds and the other
// falls within that second; size and ETag must agree as well for the object to count as unchanged.
func sameTime(a, b time.Time) bool {
	if a.Equal(b) {
		return true
	}
	if a.Nanosecond() != 0 && b.Nanosecond() != 0 {
		return false
	}
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}

// ErrHostileKey marks a key that cannot be published safely.
var ErrHostileKey = errors.New("unsafe key")

// ValidateKey refuses a relative key that would escape the cache root or collide with pqcache's own
// files: empty, absolute, "." or ".." segments, empty segments, NUL or backslash bytes, or the reserved
// .pqcache directory.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrHostileKey, key, why) }
	switch {
	case key == "":
		return bad("empty key (an object named exactly as the prefix)")
	case strings.HasPrefix(key, "/"):
		return bad("absolute path")
	case strings.ContainsRune(key, 0):
		return bad("contains a NUL byte")
	case strings.ContainsRune(key, '\\'):
		return bad("contains a backslash")
	case strings.HasSuffix(key, "/"):
		return bad("ends with '/' (a directory marker, not a file)")
	}
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad("'.' or '..' path segment")
		case i == 0 && seg == manifest.Dir:
			return bad("inside the reserved " + manifest.Dir + " directory")
		case len(seg) > 255:
			return bad("path segment longer than 255 bytes")
		}
	}
	return nil
}

// Filter applies include and exclude globs (doublestar syntax: "**" spans segments) to relative keys.
type Filter struct {
	include, exclude []string
}

// NewFilter checks the patterns and returns a filter. No include pattern means everything.
func NewFilter(include, exclude []string) (*Filter, error) {
	for _, p := range append(append([]string(nil), include...), exclude...) {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("invalid glob %q", p)
		}
	}
	return &Filter{include: include, exclude: exclude}, nil
}

// Match reports whether key is selected.
func (f *Filter) Match(key string) bool {
	if len(f.include) > 0 {
		ok := false
		for _, p := range f.include {
			if doublestar.MatchUnvalidated(p, key) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, p := range f.exclude {
		if doublestar.MatchUnvalidated(p, key) {
			return false
		}
	}
	return true
}

// ConflictTracker finds keys that would need a path to be both a file and a directory ("a/b" and
// "a/b/c"). Fed keys in sorted order, it keeps only the chain of listed keys that prefix the current
// one, so its memory is bounded by key depth, not by the number of keys: every key sorted between
// "a/b" and "a/b/c" starts with "a/b", so "a/b" stays on the chain until "a/b/c" arrives.
type ConflictTracker struct {
	chain []string
}

// Add records key and returns the earlier listed key that is a directory of it, or "".
func (t *ConflictTracker) Add(key string) string {
	for len(t.chain) > 0 && !strings.HasPrefix(key, t.chain[len(t.chain)-1]) {
		t.chain = t.chain[:len(t.chain)-1]
	}
	for _, k := range t.chain {
		if strings.HasPrefix(key, k+"/") {
			return k
		}
	}
	t.chain = append(t.chain, key)
	return ""
}

// Action is one step of a plan.
type Action struct {
	// Copy is true for a download, false for a delete.
	Copy bool
	// Object is the listed object to copy.
	Object Object
	// Old is the published entry a copy replaces or a delete removes.
	Old *manifest.Entry
	// Why says why a copy is needed.
	Why Change
}

// Merge walks a sorted listing and a sorted manifest together. It is fed through Listed (in key
// order) and pulls manifest entries from next as needed; it calls emit for each copy or delete and
// unchanged for each object left as it is.
type Merge struct {
	// Next returns the next manifest entry in key order; ok is false at the end.
	Next func() (e manifest.Entry, ok bool, err error)
	// Emit receives each action.
	Emit func(Action) error
	// Unchanged receives each object that needs nothing.
	Unchanged func(manifest.Entry)
	// Prune deletes published files whose objects are gone.
	Prune bool
	// ForceCopy re-copies everything (the source changed, or the manifest cannot be trusted).
	ForceCopy Change

	pending *manifest.Entry // manifest entry read ahead, not yet matched
	ended   bool
	lastKey string
	started bool
}

// ErrUnsorted is returned when the listing is not in key order: the merge would then delete and
// re-copy objects at random, so it stops instead.
var ErrUnsorted = errors.New("listing not in key order")

// Listed merges the next listed object.
func (m *Merge) Listed(obj Object) error {
	if m.started && obj.Key <= m.lastKey {
		return fmt.Errorf("%w: %q after %q", ErrUnsorted, obj.Key, m.lastKey)
	}
	m.started, m.lastKey = true, obj.Key
	for {
		e, ok, err := m.peek()
		if err != nil {
			return err
		}
		if !ok || e.Key > obj.Key {
			return m.Emit(Action{Copy: true, Object: obj, Why: ChangeNew})
		}
		m.pending = nil
		if e.Key < obj.Key {
			if err := m.gone(e); err != nil {
				return err
			}
			continue
		}
		why := Compare(obj, e)
		if why == "" && m.ForceCopy != "" {
			why = m.ForceCopy
		}
		if why == "" {
			m.Unchanged(e)
			return nil
		}
		return m.Emit(Action{Copy: true, Object: obj, Old: &e, Why: why})
	}
}

// Finish handles the manifest entries after the last listed object.
func (m *Merge) Finish() error {
	for {
		e, ok, err := m.peek()
		if err != nil || !ok {
			return err
		}
		m.pending = nil
		if err := m.gone(e); err != nil {
			return err
		}
	}
}

func (m *Merge) gone(e manifest.Entry) error {
	if !m.Prune {
		m.Unchanged(e)
		return nil
	}
	return m.Emit(Action{Copy: false, Old: &e})
}

func (m *Merge) peek() (manifest.Entry, bool, error) {
	if m.pending != nil {
		return *m.pending, true, nil
	}
	if m.ended {
		return manifest.Entry{}, false, nil
	}
	e, ok, err := m.Next()
	if err != nil {
		return e, false, fmt.Errorf("reading manifest: %w", err)
	}
	if !ok {
		m.ended = true
		return e, false, nil
	}
	m.pending = &e
	return e, true, nil
}
