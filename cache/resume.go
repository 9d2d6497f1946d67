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
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pqcache/pqcache/cache/integrity"
	"github.com/pqcache/pqcache/cache/manifest"
)

// A large download survives the process that started it. Its staging file has a name derived from
// the key (DIR/.pqcache/staging/resume/ID.part, kept by manifest recovery), and beside it a record
// (ID.rec): a header that identifies the object version (key, ETag, size, LastModified, how it is
// cut), then one line per checkpoint of a piece: its bounds, the bytes written, and the state of its
// hashes, or their sums once the piece is complete. A piece checkpoints every few hundred KiB
// (download.every), after its bytes are written.
//
// A later run that copies the same object version re-hashes what the record says was written (a
// local read, no fetch), keeps the pieces whose bytes still match, restores their hash states and
// fetches only the rest: a crash or power loss can lose a record line or data, never make a wrong
// byte pass. A different ETag, size or cut discards the record and the file. Records that no run
// claims are swept at the end of a complete sync.

// resumer keeps the resumable downloads of one cache.
type resumer struct {
	dir string // absolute
	mu  sync.Mutex
	// left holds the IDs found at the start and not claimed by a download since.
	left map[string]bool
}

func openResumer(root string) (*resumer, error) {
	r := &resumer{dir: filepath.Join(root, filepath.FromSlash(manifest.ResumeDir)), left: map[string]bool{}}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", manifest.ResumeDir, err)
	}
	for _, e := range entries {
		r.left[strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".part"), ".rec")] = true
	}
	return r, nil
}

func resumeID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// recordHeader identifies the object version and the cut of a resumable download.
type recordHeader struct {
	Key          string         `json:"key"`
	ETag         string         `json:"etag"`
	Size         int64          `json:"size"`
	LastModified time.Time      `json:"lastModified"`
	Plan         integrity.Plan `json:"plan"`
	PartSize     int64          `json:"partSize"`
	// Hash is the manifest's hash the checkpoints' Own states are of: a record made for another one
	// (a sync run with another --verify) resumes nothing.
	Hash integrity.Algorithm `json:"hash"`
}

// checkpoint is one line of a record after the header.
type checkpoint struct {
	Piece    int   `json:"p"`
	Start    int64 `json:"s"`
	Length   int64 `json:"l"`
	Done     int64 `json:"d"`
	Complete bool  `json:"ok,omitempty"`
	// Own and Chk are the piece's hash states (encoding.BinaryMarshaler): the manifest's hash and the
	// store's check; or their sums when complete.
	Own []byte `json:"h,omitempty"`
	Chk []byte `json:"c,omitempty"`
}

// record appends checkpoints to a download's record.
type record struct {
	mu   sync.Mutex
	f    *os.File
	rel  string // relative to the cache root
	path string
	bad  bool // a write failed: stop recording, the download goes on
}

// open prepares d's staging file: it resumes the pieces a record vouches for, or starts afresh.
func (r *resumer) open(ctx context.Context, d *download) error {
	id := resumeID(d.obj.Key)
	r.mu.Lock()
	delete(r.left, id)
	r.mu.Unlock()
	part, rec := filepath.Join(r.dir, id+".part"), filepath.Join(r.dir, id+".rec")
	d.staged = filepath.ToSlash(filepath.Join(manifest.ResumeDir, id+".part"))
	d.every = max(copyBufferSize, d.s.opts.PartSize/int64(d.s.opts.Parallelism)-copyBufferSize)
	hdr := recordHeader{Key: d.obj.Key, ETag: d.obj.ETag, Size: d.obj.Size, LastModified: d.obj.LastModified, Plan: d.plan, PartSize: d.s.opts.PartSize, Hash: d.own}

	if cps := loadRecord(rec, hdr); cps != nil {
		if f, err := os.OpenFile(part, os.O_RDWR, 0); err == nil {
			d.f = f
			// On failure the file stays as it was for a later run; restore's or the record's error is
			// the one to report.
			if err := d.restore(ctx, cps); err != nil {
				_ = f.Close()
				return err
			}
			if d.rec, err = appendRecord(rec, d.s.root); err != nil {
				_ = f.Close()
				return err
			}
			if d.resumedLen > 0 {
				d.s.log.Info("Resuming download", "key", d.obj.Key, "bytes", d.resumedLen, "of", d.obj.Size)
			}
			return nil
		}
	}
	// Nothing to resume: a new file and a new record.
	var err error
	if d.f, err = os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644); err != nil {
		return fmt.Errorf("creating staging file: %w", err)
	}
	line, _ := json.Marshal(hdr)
	// On failure the file, empty, is closed unwritten; the record's error is the one to report.
	if err := os.WriteFile(rec, append(line, '\n'), 0o644); err != nil {
		_ = d.f.Close()
		return fmt.Errorf("creating resume record: %w", err)
	}
	if d.rec, err = appendRecord(rec, d.s.root); err != nil {
		_ = d.f.Close()
		return err
	}
	return nil
}

func appendRecord(path, root string) (*record, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("opening resume record: %w", err)
	}
	rel, _ := filepath.Rel(root, path)
	return &record{f: f, rel: filepath.ToSlash(rel), path: path}, nil
}

// loadRecord returns the last checkpoint of each piece in the record at path, or nil when there is no
// record or it describes another object version or cut. Unreadable lines (a torn write) are skipped.
func loadRecord(path string, want recordHeader) map[int]checkpoint {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil
	}
	var hdr recordHeader
	if json.Unmarshal(sc.Bytes(), &hdr) != nil || !hdr.LastModified.Equal(want.LastModified) {
		return nil
	}
	hdr.LastModified = want.LastModified
	if hdr != want {
		return nil
	}
	cps := map[int]checkpoint{}
	for sc.Scan() {
		var cp checkpoint
		if json.Unmarshal(sc.Bytes(), &cp) == nil {
			cps[cp.Piece] = cp
		}
	}
	return cps
}

// restore takes the recorded pieces whose bytes in the staging file still hash as recorded.
func (d *download) restore(ctx context.Context, cps map[int]checkpoint) error {
	if err := d.s.acquire(ctx); err != nil { // re-hashing takes a slot and a buffer, as a GET does
		return err
	}
	defer d.s.release()
	buf := buffers.get()
	defer buffers.put(buf)
	for i, cp := range cps {
		if i < 0 || i >= len(d.pieces) || cp.Done <= 0 || cp.Done > cp.Length || cp.Start < 0 || cp.Start+cp.Length > d.obj.Size {
			continue
		}
		pc := &d.pieces[i]
		if pc.length >= 0 && (cp.Start != pc.start || cp.Length != pc.length) {
			continue
		}
		own := integrity.NewHash(d.own)
		if _, err := io.CopyBuffer(own, io.NewSectionReader(d.f, cp.Start, cp.Done), *buf); err != nil {
			return fmt.Errorf("re-reading %s to resume it: %w", d.staged, err)
		}
		var chk hash.Hash
		if cp.Complete {
			if !bytes.Equal(own.Sum(nil), cp.Own) {
				continue
			}
		} else {
			state, _ := own.(encoding.BinaryMarshaler).MarshalBinary()
			if !bytes.Equal(state, cp.Own) {
				continue
			}
			if d.plan.Algorithm != "" && !d.ownIsCheck() {
				chk = integrity.NewHash(d.plan.Algorithm)
				if chk.(encoding.BinaryUnmarshaler).UnmarshalBinary(cp.Chk) != nil {
					continue
				}
			}
		}
		*pc = piece{start: cp.Start, length: cp.Length, done: cp.Done}
		if cp.Complete {
			pc.complete, pc.ownSum, pc.chkSum = true, cp.Own, cp.Chk
			if d.ownIsCheck() {
				pc.chkSum = cp.Own
			}
		} else {
			pc.own, pc.chk = own, chk
		}
		d.resumedLen += cp.Done
	}
	return nil
}

// checkpoint records piece i's progress. It writes one line with one write, after the bytes it
// vouches for were written.
func (r *record) checkpoint(i int, pc *piece) {
	cp := checkpoint{Piece: i, Start: pc.start, Length: pc.length, Done: pc.done, Complete: pc.complete}
	if pc.complete {
		cp.Own, cp.Chk = pc.ownSum, pc.chkSum
	} else {
		cp.Own, _ = pc.own.(encoding.BinaryMarshaler).MarshalBinary()
		if pc.chk != nil {
			cp.Chk, _ = pc.chk.(encoding.BinaryMarshaler).MarshalBinary()
		}
	}
	line, _ := json.Marshal(cp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad {
		return
	}
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		r.bad = true
	}
}

// close closes the record. Its error is returned, as a close may report a write that failed late: the
// download then fails, and is kept for the next run (which trusts only bytes that still hash as
// recorded).
func (r *record) close() error { return r.f.Close() }

// remove deletes the record of a download that will not be resumed. Best effort: a record left
// behind is claimed by nobody and swept at the end of a complete sync.
func (r *record) remove() { _ = os.Remove(r.path) }

// sweep removes the resumable downloads nobody claimed in this run whose keys are under subs (all
// when subs is empty): their objects are gone, published, or changed.
func (r *resumer) sweep(subs []string) error {
	var errs []error
	for id := range r.left {
		hdr, ok := readHeader(filepath.Join(r.dir, id+".rec"))
		if ok && len(subs) > 0 && !hasAnyPrefix(hdr.Key, subs) {
			continue // another stage's sub-prefix: not ours to judge
		}
		for _, ext := range []string{".part", ".rec"} {
			if err := os.Remove(filepath.Join(r.dir, id+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func readHeader(path string) (recordHeader, bool) {
	var hdr recordHeader
	f, err := os.Open(path)
	if err != nil {
		return hdr, false
	}
	defer func() { _ = f.Close() }() // only read
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		return hdr, false
	}
	return hdr, json.Unmarshal(line, &hdr) == nil
}

func hasAnyPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
