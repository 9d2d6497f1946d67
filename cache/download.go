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
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/parquetmeta"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

const (
	// copyBufferSize is the buffer each GET streams through: memory is about Parallelism × 256 KiB
	// whatever the file and part sizes.
	copyBufferSize = 256 << 10
	// getAttempts bounds the GETs of one piece whose body failed mid-stream (the SDK retries failures
	// before the body); each attempt continues where the last one stopped.
	getAttempts = 4
	// replans bounds how often an object that changed after the listing is looked up again and
	// re-downloaded before the sync gives up on it.
	replans = 3
	// reserveAbove is the size above which a staging file's space is reserved (fallocate) before its
	// bytes are fetched, so that a full disk fails it early; a smaller file fails as fast by writing.
	reserveAbove = 1 << 20
	// writebackEvery is how many bytes of a large file are written between two requests that the
	// kernel start writing them to disk (sync_file_range, SYNC_FILE_RANGE_WRITE). Without them a
	// machine with gigabytes of memory keeps every byte dirty until the publisher's syncfs, which then
	// writes the whole file at the end, on the sync's critical path; with them the disk writes while
	// the network reads, and the syncfs finds little left. The request does not wait for the disk.
	writebackEvery = 4 << 20
	// directAbove is the size above which a file's bytes are written with direct I/O (O_DIRECT), from
	// the copy buffer straight to the disk, into space reserved first: no page cache to fill and write
	// back later, which for a durable copy is most of its CPU (see docs/sync.md). It is one copy
	// buffer: smaller files would pay a device round trip per file for little, and go through the page
	// cache, where the publisher's syncfs writes a batch of them together.
	directAbove = copyBufferSize
	// dioAlign is the alignment direct I/O needs of file offsets, lengths and memory: the logical block
	// size of the device, 512 or 4096 bytes on the devices volumes sit on. A write that does not meet it
	// goes through the page cache.
	dioAlign = 4096
)

// ErrCorrupt marks a download that does not match what the store says it should be.
var ErrCorrupt = errors.New("verification failed")

// copyFile downloads, verifies and hands one object to the publisher, re-planning it if it changed
// after the listing. Small files are staged in the worker's directory shard (relative to the root).
func (s *syncer) copyFile(ctx context.Context, shard string, a plan.Action, events chan<- event) {
	obj := a.Object
	src, fellBack := Source{Store: s.store, Prefix: s.prefix}, false
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return
		}
		ev, err := s.download(ctx, shard, obj, src)
		if errors.Is(err, errPartsIgnored) {
			s.learnPartsIgnored(obj.Key)
			ev, err = s.download(ctx, shard, obj, src) // planned again, without the parts
		}
		if err != nil && ctx.Err() == nil && volumeReason(err) == "" && s.fallback != nil && !fellBack {
			s.log.Warn("Copying from the fallback", "key", obj.Key, "error", err)
			src, fellBack = *s.fallback, true
			s.mu.Lock()
			s.rep.FilesFromFallback++
			s.mu.Unlock()
			ev, err = s.download(ctx, shard, obj, src)
		}
		if err == nil {
			s.progress.filesDone.Add(1)
			select {
			case events <- ev:
			case <-ctx.Done():
				if ev.record == "" { // a resumable download stays for the next run
					// Best effort: the next run's recovery empties the staging directory.
					_ = os.Remove(filepath.Join(s.root, ev.staged))
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if r := volumeReason(err); r != "" {
			// A full, read-only or failing volume fails every later file too, and may leave no room
			// to commit the manifest: stop now, with the published files as they were.
			s.abort(fmt.Errorf("copying %s: %w", obj.Key, err))
			return
		}
		class := s3store.Classify(err)
		if class != s3store.ClassPreconditionFailed && class != s3store.ClassNotFound || s.follows > 0 {
			// A follower copies one generation: a newer version of the object is not part of it.
			s.fail(obj.Key, class, err)
			return
		}
		if attempt == replans {
			s.fail(obj.Key, "", fmt.Errorf("object kept changing while it was copied (%d attempts): %w", attempt+1, err))
			return
		}
		// The object changed (or vanished) between the listing and the GET: ask the bucket what it
		// holds now and copy that version, never a mix of two.
		now, ok, serr := s.store.Describe(ctx, s.prefix+obj.Key, s.prefix)
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

// fetchPlan returns how obj is fetched and what it is checked against.
func (s *syncer) fetchPlan(obj plan.Object) integrity.Plan {
	p := integrity.Choose(integrity.Facts{
		Size: obj.Size, ETag: obj.ETag,
		Algorithm: integrity.Algorithm(obj.ChecksumAlgorithm), Type: integrity.ChecksumType(obj.ChecksumType),
	}, s.opts.PartSize)
	switch {
	case s.opts.Verify == VerifySize:
		// Size-only verification needs no upload parts: ranges or one GET, whatever the store does.
		p = p.WithoutParts(obj.Size, s.opts.PartSize).Unchecked()
	case p.Fetch == integrity.FetchParts && s.partsIgnored.Load():
		p = p.WithoutParts(obj.Size, s.opts.PartSize)
		p.Downgraded = true
	}
	return p
}

// learnPartsIgnored records that the store answered a part read of key with the whole object: this
// sync and later ones of the source fetch such objects without their parts.
func (s *syncer) learnPartsIgnored(key string) {
	if s.partsIgnored.Swap(true) {
		return
	}
	s.log.Warn("The store ignores part reads: multipart objects are fetched whole and checked by size", "key", key)
	s.warn(partsIgnoredWarning)
	if err := (storeFacts{Source: s.opts.Source, IgnoresPartNumber: true}).save(s.root); err != nil {
		s.log.Warn("Could not keep what the store does", "error", err)
	}
}

// warn adds a warning to the report, once.
func (s *syncer) warn(w string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.rep.Warnings, w) {
		s.rep.Warnings = append(s.rep.Warnings, w)
	}
}

// manifestHash is the hash the manifest records for a file fetched by plan p, computed as the bytes
// stream: the store's own full-object checksum when p checks one (one computation both verifies the
// download and lets `pqcache verify` re-check the file later against what the store vouched for),
// SHA-256 otherwise or when told to (VerifySHA256), none for size-only verification.
func (s *syncer) manifestHash(p integrity.Plan) integrity.Algorithm {
	switch {
	case s.opts.Verify == VerifySize:
		return ""
	case s.opts.Verify == VerifyChecksum && p.Method == integrity.MethodChecksum:
		return p.Algorithm
	}
	return integrity.SHA256
}

// piece is one GET's worth of a download: a byte range, or one part of a multipart upload.
type piece struct {
	start, length int64     // length < 0: an upload part whose bounds its GET will tell
	done          int64     // bytes written and hashed
	own, chk      hash.Hash // the manifest's hash and the store's check (one of them when they are the same)
	ownSum        []byte    // when complete
	chkSum        []byte
	complete      bool
}

// download is one object being fetched into its staging file.
type download struct {
	s     *syncer
	store Store // where the bytes come from: the sync's store, or its fallback
	obj   plan.Object
	key   string // in store
	plan  integrity.Plan
	own   integrity.Algorithm // the manifest's hash (manifestHash); "" for size-only verification
	f     *os.File
	// direct is a second handle on the staging file, opened with O_DIRECT, for aligned writes of a
	// large file; nil when the file is small, the destination ephemeral, or the filesystem refuses it.
	direct    *os.File
	directOff atomic.Bool // a direct write was refused: the page cache from then on
	staged    string      // relative to the root
	rec       *record     // resume record; nil when the download is not resumable
	pieces    []piece
	// every is how many bytes of a piece pass between two checkpoints of a resumable download.
	every int64

	mu         sync.Mutex // guards claim, pieces' bounds learned from responses
	claim      string     // the value the store vouches for (checksum methods)
	encrypted  atomic.Bool
	fetched    atomic.Int64 // bytes received in this run
	resumedLen int64        // bytes a resume did not fetch again
}

// download writes obj into a staging file and verifies it, returning the event that publishes it.
func (s *syncer) download(ctx context.Context, shard string, obj plan.Object, src Source) (ev event, err error) {
	d := &download{s: s, store: src.Store, obj: obj, key: src.Prefix + obj.Key, plan: s.fetchPlan(obj)}
	d.own = s.manifestHash(d.plan)
	d.pieces = d.layout()
	if d.own != "" && obj.Size > s.opts.PartSize {
		// Large downloads survive the process: a resumable staging file and a record of its pieces.
		if err := s.resume.open(ctx, d); err != nil {
			return ev, err
		}
	} else {
		d.staged = filepath.ToSlash(filepath.Join(shard, randomName()+".part"))
		if d.f, err = os.OpenFile(filepath.Join(s.root, d.staged), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); err != nil {
			return ev, fmt.Errorf("creating staging file: %w", err)
		}
	}
	defer func() {
		if cerr := d.close(); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			s.progress.bytesDone.Add(-d.fetched.Load() - d.resumedLen)
			if d.rec == nil || !keepForResume(err) {
				d.discard()
			}
		}
	}()
	s.progress.bytesDone.Add(d.resumedLen)
	if d.resumedLen > 0 {
		s.mu.Lock()
		s.rep.BytesResumed += d.resumedLen
		s.mu.Unlock()
	}
	// Reserve the space now, so that a full disk fails the file before its bytes are fetched, and so
	// that direct writes land in allocated space (direct writes that extend a file are serialised).
	direct := obj.Size > directAbove && !s.opts.Ephemeral && !s.opts.PageCache
	if obj.Size > reserveAbove || direct {
		if ferr := syscall.Fallocate(int(d.f.Fd()), 0, 0, obj.Size); ferr != nil && !errors.Is(ferr, syscall.EOPNOTSUPP) {
			return ev, &os.PathError{Op: "fallocate", Path: d.f.Name(), Err: fmt.Errorf("reserving %d bytes for %s: %w", obj.Size, obj.Key, ferr)}
		}
	}
	if direct {
		// A filesystem without direct I/O (tmpfs) refuses the open: the page cache, as for small files.
		if f, derr := os.OpenFile(d.f.Name(), os.O_WRONLY|syscall.O_DIRECT, 0); derr == nil {
			d.direct = f
		}
	}
	if d.plan.FromHead {
		sums, encrypted, err := d.store.Head(ctx, d.key, obj.ETag)
		if err != nil {
			return ev, err
		}
		d.claim = sums.Get(d.plan.Algorithm)
		d.encrypted.Store(encrypted)
	}
	if err := d.fetch(ctx); err != nil {
		return ev, err
	}
	entry, err := d.verify(ctx)
	if err != nil {
		return ev, err
	}
	ev = event{entry: entry, staged: d.staged}
	if d.rec != nil {
		ev.record = d.rec.rel
	}
	return ev, nil
}

// close closes the staging file's handles and the resume record, and returns the first error: a close
// may report a write that failed late (a full disk, NFS), and a file whose bytes may not all be in the
// staging file must not be published.
func (d *download) close() error {
	var first error
	keep := func(what string, err error) {
		if err != nil && first == nil {
			first = fmt.Errorf("closing %s: %w", what, err)
		}
	}
	if d.direct != nil {
		keep("staging file", d.direct.Close())
	}
	keep("staging file", d.f.Close())
	if d.rec != nil {
		keep("resume record", d.rec.close())
	}
	return first
}

// layout cuts the object into pieces as its plan says.
func (d *download) layout() []piece {
	size := d.obj.Size
	switch d.plan.Fetch {
	case integrity.FetchParts:
		ps := make([]piece, d.plan.Parts)
		for i := range ps {
			ps[i].length = -1
		}
		return ps
	case integrity.FetchRanges:
		part := d.s.opts.PartSize
		ps := make([]piece, 0, (size+part-1)/part)
		for off := int64(0); off < size; off += part {
			ps = append(ps, piece{start: off, length: min(part, size-off)})
		}
		return ps
	}
	return []piece{{length: size}}
}

// fetch gets every piece not yet complete. A piece takes a slot before its goroutine starts and its
// buffer after the slot: at most Parallelism goroutines and buffers, whatever the object's size.
func (d *download) fetch(ctx context.Context) error {
	if len(d.pieces) == 1 {
		if d.pieces[0].complete {
			return nil
		}
		if err := d.s.acquire(ctx); err != nil {
			return err
		}
		defer d.s.release()
		buf := buffers.get()
		defer buffers.put(buf)
		return d.fetchPiece(ctx, 0, *buf)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range d.pieces {
		if d.pieces[i].complete {
			continue
		}
		if err := d.s.acquire(ctx); err != nil {
			break
		}
		wg.Go(func() {
			defer d.s.release()
			buf := buffers.get()
			defer buffers.put(buf)
			err := recovered("fetching a range of "+d.obj.Key, func() error { return d.fetchPiece(ctx, i, *buf) })
			if errors.Is(err, s3store.ErrPanicked) {
				d.s.abort(err) // the sync's end, not this file's
			}
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return context.Cause(ctx)
}

// acquire takes one of the sync's own slots, then one of the budget it shares (Options.Slots).
func (s *syncer) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if s.opts.Slots != nil {
		if err := s.opts.Slots.Acquire(ctx); err != nil {
			<-s.slots
			return err
		}
	}
	return nil
}

func (s *syncer) release() {
	if s.opts.Slots != nil {
		s.opts.Slots.Release()
	}
	<-s.slots
}

// fetchPiece gets piece i, retrying a body that fails mid-stream with backoff and jitter; each retry
// asks for the bytes not yet written, so nothing is fetched twice.
func (d *download) fetchPiece(ctx context.Context, i int, buf []byte) error {
	for attempt := 1; ; attempt++ {
		r := d.request(i)
		body, info, err := d.store.Get(ctx, d.key, d.obj.ETag, r)
		if err == nil {
			err = d.stream(i, r, body, info, buf)
			_ = body.Close() // only read; stream's error is what counts
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || s3store.Classify(err) != "" || errors.Is(err, ErrCorrupt) || errors.Is(err, errPartsIgnored) || volumeReason(err) != "" || attempt == getAttempts {
			return err
		}
		backoff := backoffDelay(attempt)
		d.s.log.Info("Retrying GET", "key", d.obj.Key, "piece", i, "attempt", attempt, "backoff", backoff, "error", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// request is what piece i still needs: its upload part, its byte range, or the rest of it.
func (d *download) request(i int) s3store.Range {
	d.mu.Lock()
	pc := d.pieces[i]
	d.mu.Unlock()
	switch {
	case pc.length < 0:
		return s3store.Range{PartNumber: int32(i + 1)}
	case pc.done == 0 && d.plan.Fetch == integrity.FetchWhole:
		return s3store.Whole // with the store's checksums in the response
	}
	return s3store.Range{Start: pc.start + pc.done, End: pc.start + pc.length - 1}
}

// stream writes one response into piece i, hashing it on the way, and checkpoints a resumable
// download as it goes.
func (d *download) stream(i int, r s3store.Range, body io.Reader, info s3store.GetInfo, buf []byte) error {
	pc, err := d.place(i, r, info)
	if err != nil {
		return err
	}
	if d.own != "" && pc.own == nil {
		pc.own = integrity.NewHash(d.own)
	}
	if d.plan.Algorithm != "" && pc.chk == nil && !d.ownIsCheck() {
		pc.chk = integrity.NewHash(d.plan.Algorithm)
	}
	if err := d.copyBody(i, pc, body, buf); err != nil {
		return err
	}
	if pc.own != nil {
		pc.ownSum, pc.own = pc.own.Sum(nil), nil
	}
	if pc.chk != nil {
		pc.chkSum, pc.chk = pc.chk.Sum(nil), nil
	} else if d.ownIsCheck() {
		pc.chkSum = pc.ownSum
	}
	pc.complete = true
	if d.rec != nil {
		d.rec.checkpoint(i, pc)
	}
	return nil
}

// place checks that a response is the piece asked for (an upload part learns where it lies from it)
// and keeps the checksum a whole-object response vouches for.
func (d *download) place(i int, r s3store.Range, info s3store.GetInfo) (*piece, error) {
	d.mu.Lock()
	pc := &d.pieces[i]
	if pc.length < 0 { // an upload part: the response says where it lies
		if info.PartsCount == 0 && info.Start == 0 && info.Length == d.obj.Size && d.plan.Parts > 1 {
			d.mu.Unlock()
			return nil, fmt.Errorf("%s, part %d: %w", d.obj.Key, i+1, errPartsIgnored)
		}
		if info.PartsCount != int32(d.plan.Parts) {
			d.mu.Unlock()
			return nil, fmt.Errorf("%w: %s: the store says %d parts, its ETag %s says %d", ErrCorrupt, d.obj.Key, info.PartsCount, d.obj.ETag, d.plan.Parts)
		}
		if info.Start < 0 || info.Length <= 0 || info.Start+info.Length > d.obj.Size {
			d.mu.Unlock()
			return nil, fmt.Errorf("%w: %s: part %d is bytes %d+%d of an object of %d", ErrCorrupt, d.obj.Key, i+1, info.Start, info.Length, d.obj.Size)
		}
		pc.start, pc.length = info.Start, info.Length
	}
	if r == s3store.Whole && d.plan.Method == integrity.MethodChecksum && !d.plan.FromHead {
		d.claim = info.Checksums.Get(d.plan.Algorithm)
	}
	start, want := pc.start+pc.done, pc.length-pc.done
	d.mu.Unlock()
	if info.Encrypted {
		d.encrypted.Store(true)
	}
	if info.Start != start || info.Length != want {
		return nil, fmt.Errorf("%w: %s: asked for %d bytes at %d, the store sent %d at %d", ErrCorrupt, d.obj.Key, want, start, info.Length, info.Start)
	}
	return pc, nil
}

// copyBody reads the rest of piece i from body into its place in the staging file, one buffer at a
// time, hashing what it writes and checkpointing every d.every bytes and when the body fails.
func (d *download) copyBody(i int, pc *piece, body io.Reader, buf []byte) error {
	var sinceCheckpoint int64
	wb := d.writeback(pc.start + pc.done)
	fill := 0 // bytes read into buf, not yet written
	for pc.done < pc.length {
		limit := int(min(int64(len(buf)), pc.length-pc.done))
		n, rerr := body.Read(buf[fill:limit])
		fill += n
		// The buffer is written when it is full, when the piece is complete, or when the body fails:
		// one write per buffer (an aligned one for direct I/O), and nothing read is lost to a retry.
		if fill > 0 && (fill == limit || rerr != nil) {
			if err := d.writeBuffer(pc, buf[:fill], &wb); err != nil {
				return err
			}
			sinceCheckpoint += int64(fill)
			fill = 0
			if d.rec != nil && sinceCheckpoint >= d.every && pc.done < pc.length {
				d.rec.checkpoint(i, pc)
				sinceCheckpoint = 0
			}
		}
		if rerr == io.EOF && pc.done < pc.length {
			return fmt.Errorf("reading s3 object %s: %d of %d bytes at %d: %w", d.key, pc.done, pc.length, pc.start, io.ErrUnexpectedEOF)
		}
		if rerr != nil && rerr != io.EOF {
			if d.rec != nil && pc.done > 0 {
				d.rec.checkpoint(i, pc)
			}
			return fmt.Errorf("reading s3 object %s: %w", d.key, rerr)
		}
	}
	wb.flush(pc.start + pc.done)
	return nil
}

// writeBuffer writes b at the piece's next offset and hashes it, and counts it as done.
func (d *download) writeBuffer(pc *piece, b []byte, wb *writeback) error {
	at := pc.start + pc.done
	direct, err := d.writeAt(b, at)
	if err != nil {
		return err
	}
	if pc.own != nil {
		pc.own.Write(b)
	}
	if pc.chk != nil {
		pc.chk.Write(b)
	}
	pc.done += int64(len(b))
	if direct {
		wb.skip(at, pc.start+pc.done)
	} else {
		wb.wrote(pc.start + pc.done)
	}
	d.fetched.Add(int64(len(b)))
	d.s.progress.bytesDone.Add(int64(len(b)))
	return nil
}

// writeAt writes b at off of the staging file: with direct I/O when the download has it and b is
// aligned (direct is true), through the page cache otherwise (the tail of a file, a piece at an odd
// offset).
func (d *download) writeAt(b []byte, off int64) (direct bool, err error) {
	if d.direct != nil && !d.directOff.Load() && off%dioAlign == 0 && len(b)%dioAlign == 0 && aligned(b) {
		_, err := d.direct.WriteAt(b, off)
		if err == nil {
			writtenDirect.Add(int64(len(b)))
			return true, nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return false, err
		}
		// The filesystem or device wants another alignment than dioAlign (or no direct I/O at all,
		// though it took the open): the page cache from now on.
		d.directOff.Store(true)
	}
	_, err = d.f.WriteAt(b, off)
	return false, err
}

// aligned says whether b starts on a dioAlign boundary in memory.
func aligned(b []byte) bool { return address(b)%dioAlign == 0 }

// alignedBuffer returns n bytes starting on a dioAlign boundary, as direct I/O needs of memory.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+dioAlign)
	off := int(-address(b) & (dioAlign - 1))
	return b[off : off+n : off+n]
}

// address is where b's bytes start in memory, which direct I/O needs aligned. The address is only
// read: no integer is ever turned back into a pointer, which is what makes unsafe unsafe.
func address(b []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b))) //nolint:gosec // G103: reads an address for alignment, never converts one back
}

// writeback starts the kernel writing a large file's bytes as they arrive (see writebackEvery). It
// does nothing for a small file (the publisher's syncfs writes a batch of them together) or on an
// ephemeral destination, where nothing is ever flushed.
func (d *download) writeback(from int64) writeback {
	if d.s.opts.Ephemeral || d.obj.Size <= reserveAbove {
		return writeback{}
	}
	return writeback{fd: int(d.f.Fd()), from: from, on: true}
}

// writtenBack counts the bytes handed to the kernel's writeback early, and writtenDirect those
// written with direct I/O, for tests.
var writtenBack, writtenDirect atomic.Int64

// writeback tracks the bytes of one piece written since the kernel was last asked to write them.
type writeback struct {
	fd   int
	from int64 // the first byte not yet handed to the kernel
	on   bool
}

// wrote asks the kernel to start writing [from, to) once it spans writebackEvery bytes.
func (w *writeback) wrote(to int64) {
	if w.on && to-w.from >= writebackEvery {
		w.flush(to)
	}
}

// skip notes that [at, to) was written with direct I/O: nothing of it is in the page cache. What was
// written through the page cache before it is handed to the kernel now.
func (w *writeback) skip(at, to int64) {
	w.flush(at)
	w.from = to
}

// flush asks the kernel to start writing [from, to). It is advice: a failure (a filesystem without
// sync_file_range) turns it off, and the syncfs before publishing stays what makes bytes durable.
func (w *writeback) flush(to int64) {
	if !w.on || to <= w.from {
		return
	}
	if err := unix.SyncFileRange(w.fd, w.from, to-w.from, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		w.on = false
		return
	}
	writtenBack.Add(to - w.from)
	w.from = to
}

// ownIsCheck is true when the manifest's hash is the store's check itself: one hash serves both.
func (d *download) ownIsCheck() bool { return d.own != "" && d.own == d.plan.Algorithm }

// verify checks that the pieces cover the object and match what the store vouches for, and returns
// the manifest entry.
func (d *download) verify(ctx context.Context) (manifest.Entry, error) {
	obj := d.obj
	var off int64
	sizes := make([]int64, len(d.pieces))
	for i, pc := range d.pieces {
		if !pc.complete || pc.start != off {
			return manifest.Entry{}, fmt.Errorf("%w: %s: piece %d at %d, expected at %d", ErrCorrupt, obj.Key, i, pc.start, off)
		}
		off += pc.length
		sizes[i] = pc.length
	}
	if off != obj.Size {
		return manifest.Entry{}, fmt.Errorf("%w: %s: downloaded %d bytes, listed size is %d", ErrCorrupt, obj.Key, off, obj.Size)
	}
	p := d.plan
	if d.encrypted.Load() && (p.Method == integrity.MethodETag || p.Method == integrity.MethodMultipartETag) {
		p = p.Unchecked() // SSE-KMS and SSE-C ETags are not MD5s of the bytes
	}
	claim := d.claim
	switch p.Method {
	case integrity.MethodETag, integrity.MethodMultipartETag:
		claim = obj.ETag
	case integrity.MethodChecksum, integrity.MethodComposite:
		if claim == "" { // a store that lists a checksum but did not return it with the bytes
			sums, _, err := d.store.Head(ctx, d.key, obj.ETag)
			if err != nil {
				return manifest.Entry{}, err
			}
			claim = sums.Get(p.Algorithm)
		}
	}
	pieces := make([]integrity.Piece, len(d.pieces))
	for i, pc := range d.pieces {
		pieces[i] = integrity.Piece{Len: pc.length, Sum: pc.chkSum}
	}
	if err := p.Verify(pieces, claim); err != nil {
		return manifest.Entry{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, obj.Key, err)
	}
	entry := manifest.Entry{Key: obj.Key, Size: obj.Size, LastModified: obj.LastModified, ETag: obj.ETag, Verified: p.Label()}
	if p.Downgraded {
		// Counted once verified (a file that then fails to publish is counted among the failed too).
		d.s.mu.Lock()
		d.s.rep.FilesUnverified++
		d.s.mu.Unlock()
	}
	if p.Fetch == integrity.FetchParts {
		entry.Parts = sizes // a peer serves the same parts, so a follower checks the same ETag
	}
	if p.Method == integrity.MethodChecksum {
		// Verify matched it: the whole file's checksum, whatever pieces it came in.
		entry.Checksum = string(p.Algorithm) + ":" + claim
	}
	if d.own == integrity.SHA256 {
		if len(d.pieces) == 1 {
			entry.SHA256 = hex.EncodeToString(d.pieces[0].ownSum)
		} else {
			sums := make([][]byte, len(d.pieces))
			for i, pc := range d.pieces {
				sums[i] = pc.ownSum
			}
			entry.SHA256 = manifest.PieceDigest(sums)
			entry.PieceSize = sizes[0]
			for i, n := range sizes {
				if i < len(sizes)-1 && n != sizes[0] || n > sizes[0] {
					entry.PieceSizes = sizes // upload parts of several sizes
					break
				}
			}
		}
	}
	if parquetmeta.IsParquet(obj.Key) {
		facts, err := parquetmeta.Inspect(d.f, obj.Size)
		if err != nil {
			return manifest.Entry{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, obj.Key, err)
		}
		entry.Parquet = facts
	}
	return entry, nil
}

// keepForResume says whether a failed download's pieces are worth keeping for the next run: yes
// when the sync was interrupted or the network failed, no when the bytes are wrong or the object
// changed.
func keepForResume(err error) bool {
	c := s3store.Classify(err)
	return !errors.Is(err, ErrCorrupt) && c != s3store.ClassPreconditionFailed && c != s3store.ClassNotFound
}

// discard removes the staging file (and the resume record) of a download that will not be published.
func (d *download) discard() {
	// Best effort: the next run's recovery empties the staging directory.
	_ = os.Remove(filepath.Join(d.s.root, d.staged))
	if d.rec != nil {
		d.rec.remove()
	}
}

// bufferPool recycles copy buffers, and counts how many are out: a sync of many small files would
// otherwise allocate one per GET, and the count shows memory stays bounded.
type bufferPool struct {
	pool      sync.Pool
	out, peak atomic.Int64
}

var buffers = &bufferPool{pool: sync.Pool{New: func() any { b := alignedBuffer(copyBufferSize); return &b }}}

func (p *bufferPool) get() *[]byte {
	n := p.out.Add(1)
	for {
		peak := p.peak.Load()
		if n <= peak || p.peak.CompareAndSwap(peak, n) {
			break
		}
	}
	return p.pool.Get().(*[]byte)
}

func (p *bufferPool) put(b *[]byte) {
	p.out.Add(-1)
	p.pool.Put(b)
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
