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
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
)

const (
	// publishBatch is how many changes a publish waits for before it starts, and publishDelay how long
	// at most: batches share one pair of syncfs and one pair of manifest commits.
	publishBatch = 256
	publishDelay = 200 * time.Millisecond
	// maxPending bounds the changes waiting while a batch is published; past it, downloads wait.
	maxPending = 4 * publishBatch
)

// event hands a verified staged file, or a delete, to the publisher.
type event struct {
	del    bool
	entry  manifest.Entry
	staged string // relative to the root
	record string // resume record to remove once the file is published, relative to the root
}

// A publisher makes batches of verified staged files, and deletes, visible to readers. It is the seam
// between downloading and publishing: renamePublisher renames each file into place under the
// manifest's write-ahead protocol; one that publishes whole generations would build a new tree from
// the same batches instead and switch to it in Finish.
type publisher interface {
	// Publish applies one batch. Files it could not publish are reported with syncer.fail and
	// cleaned up; an error is fatal: the sync stops.
	Publish(batch []event) error
	// Finish makes everything the batches published durable and recorded in the manifest. It is
	// called once, after the last batch, also after a failed one.
	Finish() error
}

// publish feeds events to pub in batches, group-commit style: while one batch is being published,
// the next one fills, so downloads never wait for a syncfs unless maxPending changes are waiting. A
// publish error stops the sync (abort): the workers stop downloading, and the events still coming
// are drained and their staging files removed.
func (s *syncer) publish(events <-chan event, pub publisher) error {
	var (
		pending  []event
		done     = make(chan error, 1)
		busy     bool
		closed   bool
		due      bool
		failed   error
		timer    = time.NewTimer(publishDelay)
		timerSet = true
	)
	defer timer.Stop()
	for {
		in := events
		if closed || len(pending) >= maxPending {
			in = nil
		}
		select {
		case ev, ok := <-in:
			if !ok {
				closed = true
				break
			}
			if failed != nil {
				s.drop(ev)
				break
			}
			pending = append(pending, ev)
			if !timerSet {
				timer.Reset(publishDelay)
				timerSet = true
			}
		case err := <-done:
			busy = false
			if err != nil && failed == nil {
				failed = err
				s.abort(err)
				for _, ev := range pending {
					s.drop(ev)
				}
				pending = nil
			}
		case <-timer.C:
			timerSet, due = false, true
		}
		if !busy && failed == nil && len(pending) > 0 && (due || closed || len(pending) >= publishBatch) {
			batch := pending
			pending, due, busy = nil, false, true
			go func() { done <- recovered("publishing", func() error { return pub.Publish(batch) }) }()
		}
		if closed && !busy && (len(pending) == 0 || failed != nil) {
			return errors.Join(failed, pub.Finish())
		}
	}
}

// drop forgets a change the sync will not publish. A resumable download keeps its staging file.
func (s *syncer) drop(ev event) {
	if !ev.del && ev.record == "" {
		// Best effort: the next run's recovery empties the staging directory.
		_ = os.Remove(filepath.Join(s.root, ev.staged))
	}
}

// renamePublisher publishes each file by renaming it into place, under the manifest's write-ahead
// protocol (package manifest), with one flush and one commit per batch: a syncfs makes this batch's
// staged data and the previous batch's renames durable at once, then one transaction records the
// previous batch as done and this batch's intents, and this batch's files are renamed or removed;
// Finish flushes and records the last batch. With Options.Ephemeral the syncfs and the commits'
// fsyncs are skipped.
type renamePublisher struct {
	s *syncer
	// dirs are the directories this batch renamed files into, opened without following symlinks
	// (openParent), by path relative to the root, to skip walking the path per file; closed at the end
	// of each batch, and forgotten when a delete may have pruned empty directories.
	dirs map[string]int
	// done is the last batch: renamed and removed, not yet flushed nor recorded.
	done applied
}

// applied is what a batch changed, for the manifest once it is durable.
type applied struct {
	put       []manifest.Entry
	del, done []string
	records   []string // resume records to remove once recorded
}

func (p *renamePublisher) Publish(batch []event) error {
	if publishHook != nil {
		publishHook()
	}
	s := p.s
	intents := make([]manifest.Intent, 0, len(batch))
	for _, ev := range batch {
		if ev.del {
			intents = append(intents, manifest.Intent{Op: manifest.OpDelete, Entry: manifest.Entry{Key: ev.entry.Key}})
		} else {
			intents = append(intents, manifest.Intent{Op: manifest.OpPublish, Entry: ev.entry, Staged: ev.staged})
		}
	}
	// The staged files' data must be on disk before a rename can expose them, and the last batch's
	// renames before the manifest says they happened: one syncfs does both. A per-file fsync would
	// cost one flush each.
	start := time.Now()
	if err := p.durable(); err != nil {
		return err
	}
	flushed := time.Now()
	if err := s.m.ResolveAndIntend(p.done.put, p.done.del, p.done.done, intents); err != nil {
		return fmt.Errorf("recording published files and intents: %w", err)
	}
	s.log.Debug("Publishing", "files", len(batch), "flush", flushed.Sub(start), "commit", time.Since(flushed))
	p.recorded()

	var (
		a     applied
		fatal error
	)
	// Deletes first: a deleted file may free the path a new file needs as a directory.
	for _, ev := range batch {
		if !ev.del || fatal != nil {
			continue
		}
		p.closeDirs() // removing a file prunes its emptied directories
		err := manifest.RemoveFile(s.root, ev.entry.Key)
		if err != nil && volumeReason(err) != "" {
			fatal = fmt.Errorf("deleting %s: %w", ev.entry.Key, err)
			continue
		}
		a.done = append(a.done, ev.entry.Key)
		if err != nil {
			s.fail(ev.entry.Key, "", err)
			continue
		}
		a.del = append(a.del, ev.entry.Key)
	}
	for _, ev := range batch {
		if ev.del || fatal != nil {
			continue
		}
		staged := filepath.Join(s.root, ev.staged)
		err := p.rename(staged, ev.entry.Key)
		if err != nil && volumeReason(err) != "" {
			fatal = fmt.Errorf("publishing %s: %w", ev.entry.Key, err)
			continue
		}
		a.done = append(a.done, ev.entry.Key)
		if err != nil {
			// The key cannot be a path here (a file where a directory must be, a name too long...).
			// Removing what was staged for it is best effort: the rename's error is what is reported.
			_ = os.Remove(staged)
			if ev.record != "" {
				_ = os.Remove(filepath.Join(s.root, ev.record))
			}
			s.fail(ev.entry.Key, wire.ReasonHostileKeys, fmt.Errorf("publishing %s: %w", ev.entry.Key, err))
			continue
		}
		a.put = append(a.put, ev.entry)
		if ev.record != "" {
			a.records = append(a.records, ev.record)
		}
	}
	p.closeDirs()
	// After a fatal error the intents of the changes not made stay pending, their staged files in
	// place: the next run's recovery sees them as never renamed.
	p.done = a
	return fatal
}

// Finish flushes the last batch's renames and records them.
func (p *renamePublisher) Finish() error {
	if len(p.done.put)+len(p.done.del)+len(p.done.done) == 0 {
		return nil
	}
	if err := p.durable(); err != nil {
		return err
	}
	if err := p.s.m.Resolve(p.done.put, p.done.del, p.done.done); err != nil {
		return fmt.Errorf("recording published files: %w", err)
	}
	p.recorded()
	return nil
}

// recorded counts the batch the manifest now records, and forgets it.
func (p *renamePublisher) recorded() {
	a, s := p.done, p.s
	for _, r := range a.records {
		// Best effort: a record left behind is claimed by nobody and swept at the end of a complete
		// sync, and could only ever resume bytes that still hash as recorded.
		_ = os.Remove(filepath.Join(s.root, r))
	}
	s.mu.Lock()
	s.rep.FilesDeleted += int64(len(a.del))
	s.rep.FilesCopied += int64(len(a.put))
	for _, e := range a.put {
		s.rep.BytesCopied += e.Size
	}
	s.mu.Unlock()
	p.done = applied{}
}

// rename moves a staged file to the published path of key. The key's directories are made and
// opened one component at a time, relative to the root and never following a symlink (openParent):
// a directory that someone replaced by a symlink fails that file (ELOOP or ENOTDIR) instead of
// publishing it wherever the link points, outside the cache.
func (p *renamePublisher) rename(staged, key string) error {
	dir, name := path.Split(key)
	d, err := p.openParent(dir)
	if err != nil {
		return err
	}
	err = renameAt(staged, d, name, key)
	if errors.Is(err, fs.ErrNotExist) { // the directory went away after it was opened
		p.closeDirs()
		if d, err = p.openParent(dir); err == nil {
			err = renameAt(staged, d, name, key)
		}
	}
	return err
}

// openParent returns a descriptor of dir (a key's directory, "" or ending in "/"), relative to the
// root, making the directories that do not exist.
func (p *renamePublisher) openParent(dir string) (int, error) {
	if d, ok := p.dirs[dir]; ok {
		return d, nil
	}
	// The root itself may be a symlink (a volume mounted elsewhere): it is the operator's choice.
	d, err := unix.Open(p.s.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p.s.root, Err: err}
	}
	for _, comp := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if comp == "" {
			continue
		}
		err := unix.Mkdirat(d, comp, 0o755)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			_ = unix.Close(d) // a directory: nothing written through the descriptor
			return -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		next, err := openDirNoFollow(d, comp)
		_ = unix.Close(d)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		d = next
	}
	if p.dirs == nil {
		p.dirs = map[string]int{}
	}
	p.dirs[dir] = d
	return d, nil
}

// closeDirs closes the directories that openParent opened. Their close errors are dropped: nothing
// is written through them (renames are made by name, and made durable by syncFS).
func (p *renamePublisher) closeDirs() {
	for _, d := range p.dirs {
		_ = unix.Close(d)
	}
	p.dirs = nil
}

// openDirNoFollow opens a directory relative to d, failing with ELOOP or ENOTDIR on a symlink.
func openDirNoFollow(d int, name string) (int, error) {
	for {
		fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// renameAt is renameat(2) of a staged file (a path) to name in the directory d.
func renameAt(staged string, d int, name, key string) error {
	if err := unix.Renameat(unix.AT_FDCWD, staged, d, name); err != nil {
		return &os.LinkError{Op: "rename", Old: staged, New: key, Err: err}
	}
	return nil
}

func (p *renamePublisher) durable() error {
	if p.s.opts.Ephemeral {
		return nil
	}
	return syncFS(p.s.root)
}

// flushes counts syncFS calls, for tests.
var flushes atomic.Int64

// syncFS flushes the filesystem that holds dir (syncfs(2)): file data, renames and removals alike.
func syncFS(dir string) error {
	flushes.Add(1)
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // a directory opened to name the filesystem: nothing written through it
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
