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

// Package cache is pqcache's sync engine: it mirrors an S3 prefix into a local directory, one file at
// a time, so that unchanged objects cost nothing and a reader never sees a partial or corrupt file.
//
// A sync lists the prefix (paginated ListObjectsV2, no per-object HEAD), merges the listing with the
// manifest (package manifest) in key order (package plan), and runs the copies with bounded
// parallelism: ranged GETs, each conditional on the listed ETag, written into a staging file on the
// same filesystem, fsynced, verified (size, MD5 ETag or the store's checksum, Parquet framing and
// footer), then renamed into place under the manifest's write-ahead protocol. Deletes follow the same
// protocol. It imports nothing from Kubernetes: the operator runs it in worker pods through
// `pqcache sync`, and people run the same command on their laptops.
package cache

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/parquetmeta"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/internal/wire"
)

// Store is what the engine needs from an object store; s3store.Store implements it.
type Store interface {
	List(ctx context.Context, prefix, strip string, fn func([]plan.Object) error) error
	Stat(ctx context.Context, key, strip string) (plan.Object, bool, error)
	Get(ctx context.Context, key, etag string, start, end int64) (io.ReadCloser, s3store.GetInfo, error)
}

// VerifyMode says how much a downloaded file is checked before it is published.
type VerifyMode string

const (
	// VerifyChecksum checks size, SHA-256 (recorded in the manifest), the ETag's MD5 for single-part
	// unencrypted objects, the store's checksum on whole-object GETs, and Parquet framing and footer.
	VerifyChecksum VerifyMode = "checksum"
	// VerifySize checks size and Parquet framing and footer only.
	VerifySize VerifyMode = "size"
)

// Options configure one sync.
type Options struct {
	// Dir is the cache root.
	Dir string
	// Source identifies where the data comes from (endpoint, bucket, prefix); when it differs from
	// the one the manifest recorded, every file is copied again.
	Source string
	// Prefix is the source key prefix; local paths are keys relative to it.
	Prefix string
	// SubPrefixes, relative to Prefix, limit the sync to parts of the tree (pqcache stage); empty
	// syncs everything.
	SubPrefixes []string
	// Include and Exclude are globs over relative keys.
	Include, Exclude []string
	// Parallelism bounds concurrent GETs, across and within files.
	Parallelism int
	// PartSize is the size of one ranged GET.
	PartSize int64
	// Verify is how much to check before publishing.
	Verify VerifyMode
	// Prune deletes files whose objects are gone.
	Prune bool
	// DryRun plans and reports without changing anything; OnPlan sees each action.
	DryRun bool
	OnPlan func(plan.Action)
	// Progress, if set, is called every ProgressInterval while the sync runs, and once at the end.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// Log receives structured logs; nil discards them.
	Log *slog.Logger
	// Requests, if set, is read for the report's request counts.
	Requests *s3store.Requests
}

// Defaults.
const (
	DefaultParallelism = 8
	DefaultPartSize    = 16 << 20
	// copyBufferSize is the buffer each GET streams through: memory is about Parallelism × 256 KiB
	// whatever the file and part sizes.
	copyBufferSize = 256 << 10
	// getAttempts bounds retries of one GET whose body failed mid-stream (the SDK retries failures
	// before the body; this covers resets while reading it).
	getAttempts = 4
	// replans bounds how often an object that changed after the listing is listed again and
	// re-downloaded before the sync gives up on it.
	replans = 3
	// publishBatch and publishDelay bound how many publishes share one pair of manifest commits.
	publishBatch        = 256
	publishDelay        = 200 * time.Millisecond
	maxReportedFailures = 20
)

// ErrFilesFailed is returned when the sync finished but some files could not be copied; the report
// lists them.
var ErrFilesFailed = errors.New("some files failed")

type syncer struct {
	store Store
	opts  Options
	log   *slog.Logger
	m     *manifest.Manifest
	rep   *Report
	root  string
	sem   chan struct{}

	abort context.CancelCauseFunc // stops the whole sync
	// madeDirs are directories the publisher knows exist, to skip a MkdirAll per file; forgotten when
	// a delete may have pruned empty directories.
	madeDirs map[string]bool
	mu       sync.Mutex // guards rep.Failed, failure counters
	classes  map[string]int64
	progress progressCounters
}

// Sync runs one sync and returns its report. A non-nil error means the sync did not publish
// everything it planned; what it did publish is complete and in the manifest.
func Sync(ctx context.Context, store Store, opts Options) (*Report, error) {
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism
	}
	if opts.PartSize <= 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.Verify == "" {
		opts.Verify = VerifyChecksum
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &syncer{store: store, opts: opts, log: log, root: filepath.Clean(opts.Dir), classes: map[string]int64{},
		rep: &Report{Source: opts.Source, Start: time.Now().UTC(), DryRun: opts.DryRun}}
	err := s.finishReport(s.run(ctx))
	if s.opts.Progress != nil {
		s.opts.Progress(s.progress.snapshot(s.rep.Start))
	}
	return s.rep, err
}

func (s *syncer) run(ctx context.Context) error {
	filter, err := plan.NewFilter(s.opts.Include, s.opts.Exclude)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", s.root, err)
	}
	if s.opts.DryRun {
		return s.dryRun(ctx, filter)
	}
	if s.m, err = manifest.Open(s.root); err != nil {
		return err
	}
	defer s.m.Close()

	force := plan.Change("")
	prev, err := s.m.Source()
	if err != nil {
		return err
	}
	if prev != "" && prev != s.opts.Source {
		s.log.Info("Source changed: copying every file again", "was", prev, "now", s.opts.Source)
		force = plan.ChangeSource
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.abort = cancel
	stopProgress := s.startProgress(ctx)
	defer stopProgress()

	s.sem = make(chan struct{}, s.opts.Parallelism)
	copies := make(chan plan.Action, s.opts.Parallelism)
	events := make(chan event, s.opts.Parallelism)
	var workers sync.WaitGroup
	for range s.opts.Parallelism {
		workers.Go(func() {
			for a := range copies {
				s.copyFile(ctx, a, events)
			}
		})
	}
	pubErr := make(chan error, 1)
	go func() { pubErr <- s.publish(events) }()

	planErr := s.planAndCheckSpace(ctx, filter, force, events, copies)
	if planErr != nil {
		cancel(planErr)
	}
	s.progress.listed.Store(true)
	close(copies)
	workers.Wait()
	close(events)
	if err := <-pubErr; err != nil {
		return err
	}
	if planErr != nil {
		return planErr
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return s.commit(force != "")
}

// ErrInsufficientCapacity is returned when the planned copies need more room than the volume has.
var ErrInsufficientCapacity = errors.New("insufficient capacity")

// planAndCheckSpace plans the sync, sending deletes to the publisher at once and spilling copies to a
// plan file in the staging directory (a few dozen bytes per object: memory stays flat). When the plan
// is complete it compares the bytes to copy with the free space of the volume, and refuses to start
// rather than fill the disk; otherwise it feeds the copies to the workers.
func (s *syncer) planAndCheckSpace(ctx context.Context, filter *plan.Filter, force plan.Change, events chan<- event, copies chan<- plan.Action) error {
	f, err := os.CreateTemp(filepath.Join(s.root, manifest.StagingDir), "plan-*.jsonl")
	if err != nil {
		return fmt.Errorf("creating plan file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	var need int64
	err = s.plan(ctx, filter, force, func(a plan.Action) error {
		if a.Copy {
			need += a.Object.Size
			s.progress.filesTotal.Add(1)
			s.progress.bytesTotal.Add(a.Object.Size)
			return enc.Encode(a)
		}
		select {
		case events <- event{del: true, entry: *a.Old}:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	s.progress.listed.Store(true)
	if need > 0 {
		var st unix.Statfs_t
		if err := unix.Statfs(s.root, &st); err != nil {
			return fmt.Errorf("reading free space of %s: %w", s.root, err)
		}
		free := int64(st.Bavail) * st.Bsize
		if need > free {
			s.rep.Space = &Space{NeedBytes: need, FreeBytes: free, TotalBytes: int64(st.Blocks) * st.Bsize}
			return fmt.Errorf("%w: the sync must copy %d bytes (%d files) but the volume has %d bytes free of %d; grow the volume or narrow include/exclude",
				ErrInsufficientCapacity, need, s.progress.filesTotal.Load(), free, int64(st.Blocks)*st.Bsize)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var a plan.Action
		if err := dec.Decode(&a); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading plan file: %w", err)
		}
		select {
		case copies <- a:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// plan lists each sub-prefix and merges it with the manifest's entries under the same sub-prefix.
func (s *syncer) plan(ctx context.Context, filter *plan.Filter, force plan.Change, emit func(plan.Action) error) error {
	subs := s.opts.SubPrefixes
	if len(subs) == 0 {
		subs = []string{""}
	}
	for _, sub := range subs {
		var next func() (manifest.Entry, bool, error)
		if s.m != nil {
			next = s.m.Iterate(sub).Next
		} else {
			next = func() (manifest.Entry, bool, error) { return manifest.Entry{}, false, nil }
		}
		merge := &plan.Merge{
			Next:      next,
			Emit:      emit,
			Unchanged: func(manifest.Entry) { s.rep.FilesUnchanged++ },
			Prune:     s.opts.Prune,
			ForceCopy: force,
		}
		var conflicts plan.ConflictTracker
		err := s.store.List(ctx, s.opts.Prefix+sub, s.opts.Prefix, func(page []plan.Object) error {
			for _, obj := range page {
				s.rep.FilesListed++
				if !filter.Match(obj.Key) {
					continue
				}
				if strings.HasSuffix(obj.Key, "/") && obj.Size == 0 {
					continue // a "directory marker" some tools write: nothing to publish
				}
				if err := plan.ValidateKey(obj.Key); err != nil {
					s.fail(obj.Key, ReasonHostileKeys, err)
					continue
				}
				if dir := conflicts.Add(obj.Key); dir != "" {
					s.fail(obj.Key, ReasonHostileKeys, fmt.Errorf("%w %q: %q is also an object, and a path cannot be both a file and a directory", plan.ErrHostileKey, obj.Key, dir))
					continue
				}
				if err := merge.Listed(obj); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := merge.Finish(); err != nil {
			return err
		}
	}
	return nil
}

func (s *syncer) dryRun(ctx context.Context, filter *plan.Filter) error {
	if _, err := os.Stat(manifest.Path(s.root)); err == nil {
		if s.m, err = manifest.OpenReadOnly(s.root); err != nil {
			return err
		}
		defer s.m.Close()
	}
	force := plan.Change("")
	if s.m != nil {
		if prev, err := s.m.Source(); err == nil && prev != "" && prev != s.opts.Source {
			force = plan.ChangeSource
		}
	}
	return s.plan(ctx, filter, force, func(a plan.Action) error {
		if a.Copy {
			s.rep.Plan.Copies++
			s.rep.Plan.CopyBytes += a.Object.Size
		} else {
			s.rep.Plan.Deletes++
		}
		if s.opts.OnPlan != nil {
			s.opts.OnPlan(a)
		}
		return nil
	})
}

// event hands a verified staged file, or a delete, to the publisher.
type event struct {
	del    bool
	entry  manifest.Entry
	staged string // relative to the root
}

// publish applies events in batches: one commit records the batch's intents, the files are renamed
// or removed, their directories fsynced, and one commit records the result.
func (s *syncer) publish(events <-chan event) error {
	var (
		batch []event
		timer = time.NewTimer(publishDelay)
		err   error
	)
	defer timer.Stop()
	flush := func() {
		if len(batch) > 0 && err == nil {
			err = s.flush(batch)
		}
		batch = batch[:0]
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				flush()
				return err
			}
			if err != nil { // drain after a fatal error so that senders never block
				if !ev.del {
					os.Remove(filepath.Join(s.root, ev.staged))
				}
				continue
			}
			batch = append(batch, ev)
			if len(batch) >= publishBatch {
				flush()
			}
		case <-timer.C:
			flush()
			timer.Reset(publishDelay)
		}
	}
}

func (s *syncer) flush(batch []event) error {
	intents := make([]manifest.Intent, 0, len(batch))
	for _, ev := range batch {
		if ev.del {
			intents = append(intents, manifest.Intent{Op: manifest.OpDelete, Entry: manifest.Entry{Key: ev.entry.Key}})
		} else {
			intents = append(intents, manifest.Intent{Op: manifest.OpPublish, Entry: ev.entry, Staged: ev.staged})
		}
	}
	// The staged files' data must be on disk before a rename can expose them. One syncfs for the batch
	// costs one journal commit where a per-file fsync costs one each: with 10,000 small files that is
	// the difference between waiting on the disk and not.
	if err := syncFS(s.root); err != nil {
		return err
	}
	if err := s.m.Intend(intents); err != nil {
		return fmt.Errorf("recording intents: %w", err)
	}
	var (
		put       []manifest.Entry
		del, done []string
		dirs      = map[string]bool{}
	)
	// Deletes first: a deleted file may free the path a new file needs as a directory.
	for _, ev := range batch {
		if !ev.del {
			continue
		}
		s.madeDirs = nil // removing a file prunes its emptied directories
		done = append(done, ev.entry.Key)
		if err := manifest.RemoveFile(s.root, ev.entry.Key); err != nil {
			s.fail(ev.entry.Key, "", err)
			continue
		}
		del = append(del, ev.entry.Key)
		s.rep.FilesDeleted++
	}
	for _, ev := range batch {
		if ev.del {
			continue
		}
		done = append(done, ev.entry.Key)
		final := manifest.LocalPath(s.root, ev.entry.Key)
		staged := filepath.Join(s.root, ev.staged)
		var err error
		if dir := filepath.Dir(final); !s.madeDirs[dir] {
			if err = os.MkdirAll(dir, 0o755); err == nil {
				if s.madeDirs == nil {
					s.madeDirs = map[string]bool{}
				}
				s.madeDirs[dir] = true
			}
		}
		if err == nil {
			err = os.Rename(staged, final)
			if errors.Is(err, fs.ErrNotExist) { // the directory went away after it was cached
				delete(s.madeDirs, filepath.Dir(final))
				if err = os.MkdirAll(filepath.Dir(final), 0o755); err == nil {
					err = os.Rename(staged, final)
				}
			}
		}
		if err != nil {
			os.Remove(staged)
			s.fail(ev.entry.Key, ReasonHostileKeys, fmt.Errorf("publishing %s: %w", ev.entry.Key, err))
			continue
		}
		dirs[filepath.Dir(final)] = true // a rename to make durable
		put = append(put, ev.entry)
		s.rep.FilesCopied++
		s.rep.BytesCopied += ev.entry.Size
	}
	// The renames and removals must be on disk before the manifest says they happened.
	if len(dirs) > 0 || len(del) > 0 {
		if err := syncFS(s.root); err != nil {
			return err
		}
	}
	if err := s.m.Resolve(put, del, done); err != nil {
		return fmt.Errorf("recording published files: %w", err)
	}
	return nil
}

// copyFile downloads, verifies and hands one object to the publisher, re-planning it if it changed
// after the listing.
func (s *syncer) copyFile(ctx context.Context, a plan.Action, events chan<- event) {
	obj := a.Object
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return
		}
		staged, entry, err := s.download(ctx, obj)
		if err == nil {
			s.progress.filesDone.Add(1)
			select {
			case events <- event{entry: entry, staged: staged}:
			case <-ctx.Done():
				os.Remove(filepath.Join(s.root, staged))
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, syscall.ENOSPC) {
			// A full volume fails every later file too, and leaves no room to commit the manifest:
			// stop now, with the published files as they were.
			s.abort(fmt.Errorf("volume full while copying %s: %w", obj.Key, err))
			return
		}
		if s3store.Classify(err) != s3store.ClassPreconditionFailed && s3store.Classify(err) != s3store.ClassNotFound {
			s.fail(obj.Key, s3store.Classify(err), err)
			return
		}
		if attempt == replans {
			s.fail(obj.Key, "", fmt.Errorf("object kept changing while it was copied (%d attempts): %w", attempt+1, err))
			return
		}
		// The object changed (or vanished) between the listing and the GET: list it again and copy
		// the version that is there now, never a mix of two.
		now, ok, serr := s.store.Stat(ctx, s.opts.Prefix+obj.Key, s.opts.Prefix)
		if serr != nil {
			s.fail(obj.Key, s3store.Classify(serr), serr)
			return
		}
		s.mu.Lock()
		s.rep.Replanned++
		s.mu.Unlock()
		s.log.Info("Object changed after listing; copying its new version", "key", obj.Key, "etag", obj.ETag, "gone", !ok)
		if !ok {
			if a.Old != nil && s.opts.Prune {
				select {
				case events <- event{del: true, entry: *a.Old}:
				case <-ctx.Done():
				}
			}
			return
		}
		s.progress.bytesTotal.Add(now.Size - obj.Size)
		obj = now
	}
}

// download writes obj into a new staging file and verifies it, returning the staged path relative to
// the root and the manifest entry that will describe it.
func (s *syncer) download(ctx context.Context, obj plan.Object) (staged string, entry manifest.Entry, err error) {
	staged = filepath.ToSlash(filepath.Join(manifest.StagingDir, randomName()+".part"))
	path := filepath.Join(s.root, staged)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return "", entry, fmt.Errorf("creating staging file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing staging file: %w", cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	// Reserve the space now, so that a full disk fails the file before its bytes are fetched.
	if obj.Size > 0 {
		if ferr := syscall.Fallocate(int(f.Fd()), 0, 0, obj.Size); ferr != nil && !errors.Is(ferr, syscall.EOPNOTSUPP) {
			return "", entry, fmt.Errorf("reserving %d bytes for %s: %w", obj.Size, obj.Key, ferr)
		}
	}
	key := s.opts.Prefix + obj.Key
	wantMD5 := s.opts.Verify == VerifyChecksum && isMD5ETag(obj.ETag)
	var (
		sha, md hash.Hash
		info    s3store.GetInfo
	)
	if obj.Size <= s.opts.PartSize {
		// One GET for the whole object: hash while streaming. When the store returns a full-object
		// checksum the SDK validates it, and the ETag's MD5 adds nothing.
		info, err = s.getRange(ctx, key, obj, 0, -1, func(got s3store.GetInfo) (io.Writer, error) {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			sinks := []io.Writer{f}
			sha, md = nil, nil
			if s.opts.Verify == VerifyChecksum {
				sha = sha256.New()
				sinks = append(sinks, sha)
			}
			if wantMD5 && !got.ChecksumValidated && !got.Encrypted {
				md = md5.New()
				sinks = append(sinks, md)
			}
			return io.MultiWriter(sinks...), nil
		})
	} else {
		info, err = s.getParts(ctx, key, obj, f)
	}
	if err != nil {
		return "", entry, err
	}
	// The publisher makes the data durable for a whole batch at once (syncfs), before the rename.
	stat, err := f.Stat()
	if err != nil {
		return "", entry, err
	}
	if stat.Size() != obj.Size {
		return "", entry, fmt.Errorf("%s: downloaded %d bytes, listed size is %d", obj.Key, stat.Size(), obj.Size)
	}
	if s.opts.Verify == VerifyChecksum && sha == nil {
		// Parts arrived out of order: hash the file in one sequential pass (from the page cache).
		sha = sha256.New()
		sinks := []io.Writer{sha}
		if wantMD5 && !info.Encrypted {
			md = md5.New()
			sinks = append(sinks, md)
		}
		buf := getBuffer()
		_, err := io.CopyBuffer(io.MultiWriter(sinks...), io.NewSectionReader(f, 0, obj.Size), *buf)
		putBuffer(buf)
		if err != nil {
			return "", entry, fmt.Errorf("hashing %s: %w", obj.Key, err)
		}
	}
	if md != nil {
		if got, want := hex.EncodeToString(md.Sum(nil)), strings.Trim(obj.ETag, `"`); got != want {
			return "", entry, fmt.Errorf("%w: %s has MD5 %s but its ETag says %s", ErrCorrupt, obj.Key, got, want)
		}
	}
	entry = manifest.Entry{Key: obj.Key, Size: obj.Size, LastModified: obj.LastModified, ETag: obj.ETag}
	if sha != nil {
		entry.SHA256 = hex.EncodeToString(sha.Sum(nil))
	}
	if parquetmeta.IsParquet(obj.Key) {
		facts, err := parquetmeta.Inspect(f, obj.Size)
		if err != nil {
			return "", entry, fmt.Errorf("%w: %s: %v", ErrCorrupt, obj.Key, err)
		}
		entry.Parquet = facts
	}
	return staged, entry, nil
}

// ErrCorrupt marks a download that does not match what the store says it should be.
var ErrCorrupt = errors.New("verification failed")

// getParts fetches obj in ranged GETs of PartSize, up to Parallelism at a time across the whole sync.
func (s *syncer) getParts(ctx context.Context, key string, obj plan.Object, f *os.File) (s3store.GetInfo, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		enc      atomic.Bool
	)
	for off := int64(0); off < obj.Size; off += s.opts.PartSize {
		end := min(off+s.opts.PartSize, obj.Size) - 1
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			got, err := s.getRange(ctx, key, obj, off, end, func(s3store.GetInfo) (io.Writer, error) {
				return io.NewOffsetWriter(f, off), nil
			})
			if got.Encrypted {
				enc.Store(true)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return s3store.GetInfo{Encrypted: enc.Load()}, firstErr
}

// getRange runs one GET (the whole object when end < 0) into the writer sink returns for the
// response, holding a parallelism slot, and retries a body that fails mid-stream with backoff and
// jitter. sink is called again for each attempt, so that a retry starts from a clean state.
func (s *syncer) getRange(ctx context.Context, key string, obj plan.Object, start, end int64, sink func(s3store.GetInfo) (io.Writer, error)) (s3store.GetInfo, error) {
	want := end - start + 1
	if end < 0 {
		want = obj.Size
	}
	buf := getBuffer()
	defer putBuffer(buf)
	for attempt := 1; ; attempt++ {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return s3store.GetInfo{}, context.Cause(ctx)
		}
		n, info, err := s.getOnce(ctx, key, obj.ETag, start, end, sink, *buf)
		<-s.sem
		if err == nil && n != want {
			err = fmt.Errorf("%s: bytes %d-%d: got %d bytes, want %d: %w", obj.Key, start, end, n, want, io.ErrUnexpectedEOF)
		}
		if err == nil {
			return info, nil
		}
		s.progress.bytesDone.Add(-n)
		if ctx.Err() != nil || s3store.Classify(err) != "" || errors.Is(err, ErrCorrupt) || attempt == getAttempts {
			return s3store.GetInfo{}, err
		}
		backoff := backoffDelay(attempt)
		s.log.Info("Retrying GET", "key", obj.Key, "attempt", attempt, "backoff", backoff, "error", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return s3store.GetInfo{}, context.Cause(ctx)
		}
	}
}

func (s *syncer) getOnce(ctx context.Context, key, etag string, start, end int64, sink func(s3store.GetInfo) (io.Writer, error), buf []byte) (int64, s3store.GetInfo, error) {
	body, info, err := s.store.Get(ctx, key, etag, start, end)
	if err != nil {
		return 0, info, err
	}
	defer body.Close()
	w, err := sink(info)
	if err != nil {
		return 0, info, err
	}
	n, err := io.CopyBuffer(&countingWriter{w: w, n: &s.progress.bytesDone}, body, buf)
	if err != nil {
		return n, info, fmt.Errorf("reading s3 object %s: %w", key, err)
	}
	return n, info, nil
}

// buffers recycles copy buffers: a sync of many small files would otherwise allocate one per GET.
var buffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

func getBuffer() *[]byte  { return buffers.Get().(*[]byte) }
func putBuffer(b *[]byte) { buffers.Put(b) }

// commit bumps the manifest generation when the sync changed anything, and fills the report's
// manifest and layout summaries in the same pass over the entries.
func (s *syncer) commit(sourceChanged bool) error {
	var layout parquetmeta.Summary
	visit := func(e manifest.Entry) { layout.Add(e.Size, e.Parquet) }
	var (
		sum manifest.Summary
		err error
	)
	gen, err := s.m.Summary(nil)
	if err != nil {
		return err
	}
	if s.rep.FilesCopied+s.rep.FilesDeleted > 0 || sourceChanged || gen.Generation == 0 {
		sum, err = s.m.Commit(s.opts.Source, visit)
	} else {
		sum, err = s.m.Summary(visit)
	}
	if err != nil {
		return err
	}
	s.rep.Manifest = sum
	s.rep.Layout = Layout{
		ParquetFiles: layout.ParquetFiles, RowGroups: layout.RowGroups,
		MinRowsPerGroup: layout.MinRowsPerGroup, MaxRowsPerGroup: layout.MaxRowsPerGroup,
		Advice: layout.Advice(),
	}
	return nil
}

// fail records a file that could not be copied; the sync goes on with the others.
func (s *syncer) fail(key, class string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rep.FilesFailed++
	s.classes[class]++
	if len(s.rep.Failed) < maxReportedFailures {
		s.rep.Failed = append(s.rep.Failed, FileError{Key: key, Error: err.Error()})
	}
	s.log.Warn("File not copied", "key", key, "error", err)
}

// finishReport fills the report's totals and outcome and returns the sync's error: err, or
// ErrFilesFailed when the sync ran to the end but some files were not copied.
func (s *syncer) finishReport(err error) error {
	r := s.rep
	r.End = time.Now().UTC()
	r.DurationMillis = r.End.Sub(r.Start).Milliseconds()
	if r.DurationMillis > 0 {
		r.BytesPerSecond = r.BytesCopied * 1000 / r.DurationMillis
	}
	if s.opts.Requests != nil {
		r.Requests = RequestCounts{List: s.opts.Requests.List.Load(), Get: s.opts.Requests.Get.Load(), Head: s.opts.Requests.Head.Load()}
	}
	if err == nil && r.FilesFailed > 0 {
		err = fmt.Errorf("%w: %d of the planned files", ErrFilesFailed, r.FilesFailed)
	}
	if err == nil {
		r.Result = ResultSucceeded
		return nil
	}
	r.Result = ResultFailed
	r.Message = wire.Truncate(err.Error(), 1024)
	r.Reason = s.reason(err)
	return err
}

// reason picks the condition reason a Dataset reports for a failed sync.
func (s *syncer) reason(err error) string {
	switch s3store.Classify(err) {
	case s3store.ClassAccessDenied:
		return ReasonAccessDenied
	case s3store.ClassNoSuchBucket:
		return ReasonNoSuchBucket
	case s3store.ClassInvalidCredentials:
		return ReasonInvalidCredentials
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrInsufficientCapacity) {
		return ReasonInsufficientCapacity
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
	case s3store.ClassAccessDenied:
		return ReasonAccessDenied
	case s3store.ClassInvalidCredentials:
		return ReasonInvalidCredentials
	case ReasonHostileKeys:
		return ReasonHostileKeys
	}
	return ReasonSyncFailed
}

func backoffDelay(attempt int) time.Duration {
	base := 200 * time.Millisecond << (attempt - 1)
	var b [1]byte
	_, _ = rand.Read(b[:])
	// Full jitter: anywhere from half to the whole of the exponential delay.
	return base/2 + time.Duration(int64(base/2)*int64(b[0])/255)
}

func randomName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var md5ETag = regexp.MustCompile(`^"?[0-9a-fA-F]{32}"?$`)

// isMD5ETag reports whether an ETag is the MD5 of the content: single-part uploads have one; multipart
// ETags end in "-<parts>".
func isMD5ETag(etag string) bool { return md5ETag.MatchString(etag) }

// syncFS flushes the filesystem that holds dir (syncfs(2)): file data, renames and removals alike.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("flushing %s to disk: %w", dir, err)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
