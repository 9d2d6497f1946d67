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

// Package manifest is the record, kept on the cache volume beside the files, of what pqcache has
// published: one entry per file (key, size, LastModified, ETag, SHA-256, Parquet facts).
//
// It is an embedded bbolt database (DIR/.pqcache/manifest.db) rather than a JSON file rewritten on
// every commit: bbolt commits a transaction atomically and durably (copy-on-write pages, fsync), keeps
// keys sorted (so a sync merges the manifest with the sorted S3 listing in one pass, in memory that does
// not grow with the object count), and updates one entry without rewriting a million others.
//
// Publishing a file is a small write-ahead protocol, so that a process killed at any instant leaves a
// manifest that says exactly what is on disk:
//  1. an intent (the new entry and the staged file's path) is committed;
//  2. the staged file is renamed over the published one (atomic on POSIX filesystems);
//  3. the entry replaces the old one and the intent is dropped, in one transaction.
//
// Recover resolves intents left by a crash: a staged file still present means step 2 never happened
// (the old file and entry stand); a staged file gone means it did (the new entry takes over).
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
)

// Dir is the reserved directory, under the cache root, that holds the manifest and staged files. No
// object key may publish into it.
const Dir = ".pqcache"

// StagingDir is where files are downloaded before they are verified and published. It is on the same
// filesystem as the published files, so publishing is a rename.
const StagingDir = Dir + "/staging"

// ResumeDir holds, inside StagingDir, large downloads in progress with the record of their finished
// pieces: recovery keeps it, so that a sync killed in the middle of a large object resumes from its
// verified pieces (the sync engine owns its contents).
const ResumeDir = StagingDir + "/resume"

const dbFile = Dir + "/manifest.db"

var (
	bucketFiles   = []byte("files")
	bucketPending = []byte("pending")
	bucketMeta    = []byte("meta")

	metaGeneration = []byte("generation")
	metaSource     = []byte("source")
	metaDigest     = []byte("digest")
	metaSummary    = []byte("summary") // the last Commit's Summary and extra bytes, while not dirty
	metaDirty      = []byte("dirty")   // set when an entry changes, cleared by Commit
)

// Entry is one published file.
type Entry struct {
	// Key is the object key relative to the source prefix, and the file's slash-separated path
	// relative to the cache root.
	Key string `json:"key"`
	// Size is the object's size in bytes.
	Size int64 `json:"size"`
	// LastModified is the object's LastModified as listed.
	LastModified time.Time `json:"lastModified"`
	// ETag is the object's ETag as listed, quotes included.
	ETag string `json:"etag"`
	// SHA256 is the hex SHA-256 of the file pqcache published; empty when the sync ran with size-only
	// verification, or when Checksum is the file's hash (see Checksum). A file downloaded in pieces
	// (PieceSize > 0) was hashed piece by piece as the pieces arrived, in parallel: SHA256 is then the
	// SHA-256 of the pieces' SHA-256 digests in order, followed by "-<pieces>" (PieceDigest), and
	// HashFile recomputes it the same way.
	SHA256 string `json:"sha256,omitempty"`
	// PieceSize is the size of every piece but the last when SHA256 covers pieces.
	PieceSize int64 `json:"pieceSize,omitempty"`
	// PieceSizes lists each piece's size when they differ (the parts of an upload made with parts of
	// several sizes); PieceSize is then the first one's.
	PieceSizes []int64 `json:"pieceSizes,omitempty"`
	// Verified says what the store vouched for that the download matched: "checksum:CRC64NVME",
	// "composite:CRC32", "etag", "multipart-etag", or "size" (only the size). Empty in older manifests.
	Verified string `json:"verified,omitempty"`
	// Checksum is the full-object checksum the store vouched for and the download matched, as
	// "<ALGORITHM>:<value as S3 writes it>" ("CRC64NVME:9C+2y1f0x4o="). It covers the whole file
	// whatever pieces it was fetched in, so `pqcache verify` recomputes it in one pass. Unless the
	// sync was told to keep SHA-256 too (--verify sha256), a file with a Checksum has no SHA256: the
	// check against the store and the manifest's hash are then one computation.
	Checksum string `json:"checksum,omitempty"`
	// Parts lists the sizes of the upload's parts, for an object fetched part by part (its multipart
	// ETag or composite checksum is checked over the upload's own parts): a peer serving this file
	// answers GetObject partNumber from them, so that a follower checks the same ETag. Empty for
	// anything else, and in manifests written before pqcache recorded it.
	Parts []int64 `json:"parts,omitempty"`
	// Parquet holds facts from the footer of a Parquet file.
	Parquet *ParquetFacts `json:"parquet,omitempty"`
}

// Hash is the entry's content hash for digests and listings: its SHA256, else its Checksum.
func (e Entry) Hash() string {
	if e.SHA256 != "" {
		return e.SHA256
	}
	return e.Checksum
}

// ParquetFacts are read from a Parquet file's footer.
type ParquetFacts struct {
	Rows            int64 `json:"rows"`
	RowGroups       int64 `json:"rowGroups"`
	MinRowsPerGroup int64 `json:"minRowsPerGroup"`
	MaxRowsPerGroup int64 `json:"maxRowsPerGroup"`
	CompressedBytes int64 `json:"compressedBytes"`
}

// Op is what an intent will do.
type Op string

const (
	// OpPublish renames a staged file over the published path.
	OpPublish Op = "publish"
	// OpDelete removes a published file.
	OpDelete Op = "delete"
)

// Intent is a change that has been decided but may not be done yet.
type Intent struct {
	Op Op `json:"op"`
	// Entry is the entry that will describe the file once published (OpPublish), or the key to
	// delete (OpDelete, only Key is set).
	Entry Entry `json:"entry"`
	// Staged is the staged file's path relative to the cache root (OpPublish).
	Staged string `json:"staged,omitempty"`
}

// Manifest is an open manifest database.
type Manifest struct {
	root    string
	db      *bolt.DB
	resolve int // Resolve calls, to release mapped pages every releaseEvery of them
}

// Path returns the manifest database's path under root.
func Path(root string) string { return filepath.Join(root, filepath.FromSlash(dbFile)) }

// LocalPath returns the published path of key under root. The key must have been checked by
// plan.ValidateKey.
func LocalPath(root, key string) string { return filepath.Join(root, filepath.FromSlash(key)) }

// Open opens (creating if needed) the manifest of the cache at root for writing, and recovers what an
// earlier run left half done.
func Open(root string) (*Manifest, error) { return OpenWith(root, OpenOptions{}) }

// OpenOptions change how a manifest is written.
type OpenOptions struct {
	// NoSync skips the fsyncs of each commit: for a scratch volume whose contents die with the pod
	// (pqcache stage --ephemeral), where a crash loses the volume anyway. Commits stay atomic for
	// readers in the same machine.
	NoSync bool
}

// OpenWith is Open with options.
func OpenWith(root string, o OpenOptions) (*Manifest, error) {
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(StagingDir)), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", StagingDir, err)
	}
	db, err := bolt.Open(Path(root), 0o644, &bolt.Options{
		Timeout: 5 * time.Second,
		// A large initial map avoids remapping while readers hold transactions open.
		InitialMmapSize: 256 << 20,
		NoSync:          o.NoSync,
	})
	if err != nil {
		return nil, fmt.Errorf("opening manifest %s: %w", Path(root), err)
	}
	m := &Manifest{root: root, db: db}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketFiles, bucketPending, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("initialising manifest: %w", err), db.Close())
	}
	if err := m.recover(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return m, nil
}

// OpenReadOnly opens the manifest for reading, as a reader of a read-only volume does. It changes
// nothing on disk: intents left by a crash are resolved in what Get and Scan return instead.
func OpenReadOnly(root string) (*Manifest, error) {
	if _, err := os.Stat(Path(root)); err != nil {
		return nil, fmt.Errorf("no pqcache manifest in %s: %w", root, err)
	}
	db, err := bolt.Open(Path(root), 0o444, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("opening manifest %s: %w", Path(root), err)
	}
	return &Manifest{root: root, db: db}, nil
}

// Close closes the database.
func (m *Manifest) Close() error { return m.db.Close() }

// Root is the cache directory the manifest describes.
func (m *Manifest) Root() string { return m.root }

// recover resolves the intents an interrupted run left, then empties the staging directory.
func (m *Manifest) recover() error {
	var intents []Intent
	if err := m.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPending).ForEach(func(_, v []byte) error {
			var in Intent
			if err := json.Unmarshal(v, &in); err != nil {
				return err
			}
			intents = append(intents, in)
			return nil
		})
	}); err != nil {
		return fmt.Errorf("reading pending intents: %w", err)
	}
	// Intents are bounded by the publish batches in flight, so holding them is fine.
	for _, in := range intents {
		switch in.Op {
		case OpPublish:
			if _, err := os.Lstat(filepath.Join(m.root, filepath.FromSlash(in.Staged))); err == nil {
				// Never renamed: the old file and entry stand. The staged file goes with the rest below.
				if err := m.Resolve(nil, nil, []string{in.Entry.Key}); err != nil {
					return err
				}
				continue
			}
			if _, err := os.Lstat(LocalPath(m.root, in.Entry.Key)); err == nil {
				if err := m.Resolve([]Entry{in.Entry}, nil, []string{in.Entry.Key}); err != nil {
					return err
				}
			} else if err := m.Resolve(nil, []string{in.Entry.Key}, []string{in.Entry.Key}); err != nil {
				return err
			}
		case OpDelete:
			if err := RemoveFile(m.root, in.Entry.Key); err != nil {
				return err
			}
			if err := m.Resolve(nil, []string{in.Entry.Key}, []string{in.Entry.Key}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown intent %q for %s", in.Op, in.Entry.Key)
		}
	}
	// Empty the staging directory but for the resumable downloads.
	staging := filepath.Join(m.root, filepath.FromSlash(StagingDir))
	left, err := os.ReadDir(staging)
	if err != nil {
		return fmt.Errorf("reading %s: %w", StagingDir, err)
	}
	for _, d := range left {
		if d.Name() == filepath.Base(ResumeDir) && d.IsDir() {
			continue
		}
		if err := os.RemoveAll(filepath.Join(staging, d.Name())); err != nil {
			return fmt.Errorf("cleaning %s: %w", StagingDir, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(m.root, filepath.FromSlash(ResumeDir)), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", ResumeDir, err)
	}
	return nil
}

// RemoveFile deletes the published file of key, if present, and then its parent directories while
// they are empty, so that a later key may use the path as a file. It works relative to directory
// descriptors opened one component at a time without following symlinks: a directory that someone
// replaced by a symlink fails the removal (ELOOP or ENOTDIR) instead of deleting a file wherever the
// link points, outside the cache.
func RemoveFile(root, key string) error {
	comps := strings.Split(key, "/")
	d, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return removeErr(key, root, err)
	}
	dirs := []int{d} // dirs[i] holds comps[i]
	defer func() {
		for _, d := range dirs {
			_ = unix.Close(d) // directories: nothing written through them
		}
	}()
	for _, c := range comps[:len(comps)-1] {
		d, err := unix.Openat(dirs[len(dirs)-1], c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return removeErr(key, c, err)
		}
		dirs = append(dirs, d)
	}
	if err := unix.Unlinkat(dirs[len(dirs)-1], comps[len(comps)-1], 0); err != nil {
		return removeErr(key, key, err)
	}
	for i := len(dirs) - 1; i > 0; i-- {
		if unix.Unlinkat(dirs[i-1], comps[i-1], unix.AT_REMOVEDIR) != nil {
			break // not empty (or already gone): stop climbing
		}
	}
	return nil
}

// removeErr wraps the error of one step of RemoveFile; a file or directory already gone is no error.
func removeErr(key, name string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("removing %s: %w", key, &os.PathError{Op: "remove", Path: name, Err: err})
}

// Intend records intents durably, before the changes they describe are made.
func (m *Manifest) Intend(intents []Intent) error {
	if len(intents) == 0 {
		return nil
	}
	return m.ResolveAndIntend(nil, nil, nil, intents)
}

// Resolve puts entries (sorting put in place), deletes keys and drops the intents of done, in one
// transaction. It is not safe for concurrent use.
func (m *Manifest) Resolve(put []Entry, del []string, done []string) error {
	return m.ResolveAndIntend(put, del, done, nil)
}

// ResolveAndIntend is Resolve followed by Intend, in one transaction: a publisher that makes one
// batch's renames and the next batch's data durable with one flush records both with one commit.
func (m *Manifest) ResolveAndIntend(put []Entry, del []string, done []string, intents []Intent) error {
	if len(put)+len(del) > 0 {
		if m.resolve++; m.resolve%releaseEvery == 0 {
			// Appending reads the last pages back through the mapping; over a sync of a million files
			// every page has been the last one (see release).
			// A hint to the kernel: a View that cannot begin (a closed database) has nothing to release.
			defer func() { _ = m.db.View(func(tx *bolt.Tx) error { release(tx); return nil }) }()
		}
	}
	return m.db.Update(func(tx *bolt.Tx) error {
		files, pending := tx.Bucket(bucketFiles), tx.Bucket(bucketPending)
		if len(put)+len(del) > 0 {
			if err := tx.Bucket(bucketMeta).Put(metaDirty, []byte{1}); err != nil {
				return err
			}
		}
		// Keys mostly arrive in order (a sync publishes in listing order, give or take the
		// downloads in flight): fuller pages than bbolt's half-full default make a manifest of a
		// million entries a third smaller.
		files.FillPercent = 0.9
		slices.SortFunc(put, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
		for _, e := range put {
			if err := files.Put([]byte(e.Key), encodeEntry(e)); err != nil {
				return fmt.Errorf("recording %s: %w", e.Key, err)
			}
		}
		for _, k := range del {
			if err := files.Delete([]byte(k)); err != nil {
				return fmt.Errorf("forgetting %s: %w", k, err)
			}
		}
		for _, k := range done {
			if err := pending.Delete([]byte(k)); err != nil {
				return err
			}
		}
		for _, in := range intents {
			v, err := json.Marshal(in)
			if err != nil {
				return err
			}
			if err := pending.Put([]byte(in.Entry.Key), v); err != nil {
				return fmt.Errorf("recording intent for %s: %w", in.Entry.Key, err)
			}
		}
		return nil
	})
}

// Get returns the entry of key as a reader sees it.
func (m *Manifest) Get(key string) (Entry, bool, error) {
	var (
		e     Entry
		found bool
	)
	err := m.db.View(func(tx *bolt.Tx) error {
		var err error
		e, found, err = m.readerView(tx, []byte(key), tx.Bucket(bucketFiles).Get([]byte(key)))
		return err
	})
	return e, found, err
}

// readerView applies a pending intent, if any, to the stored entry v of key: what a reader must
// believe when a writer crashed mid-publish and nobody has recovered yet.
func (m *Manifest) readerView(tx *bolt.Tx, key, v []byte) (Entry, bool, error) {
	return m.readerViewOf(tx, tx.Bucket(bucketPending), key, v)
}

// readerViewOf is readerView with the pending bucket given, or nil when it is empty (an iterator
// checks once per batch, not once per entry).
func (m *Manifest) readerViewOf(_ *bolt.Tx, pendingBucket *bolt.Bucket, key, v []byte) (Entry, bool, error) {
	var e Entry
	found := v != nil
	if found {
		var err error
		if e, err = decodeEntry(key, v); err != nil {
			return e, false, fmt.Errorf("decoding entry %s: %w", key, err)
		}
	}
	if pendingBucket == nil {
		return e, found, nil
	}
	pv := pendingBucket.Get(key)
	if pv == nil {
		return e, found, nil
	}
	var in Intent
	if err := json.Unmarshal(pv, &in); err != nil {
		return e, found, fmt.Errorf("decoding intent %s: %w", key, err)
	}
	switch in.Op {
	case OpPublish:
		if _, err := os.Lstat(filepath.Join(m.root, filepath.FromSlash(in.Staged))); errors.Is(err, fs.ErrNotExist) {
			return in.Entry, true, nil // renamed: the new file is published
		}
	case OpDelete:
		if _, err := os.Lstat(LocalPath(m.root, string(key))); errors.Is(err, fs.ErrNotExist) {
			return Entry{}, false, nil
		}
	}
	return e, found, nil
}

// scanBatch is how many entries one read transaction returns: transactions stay short (bbolt writers
// wait for long readers when the file grows), and memory stays bounded.
const scanBatch = 1024

// Scan calls fn for every entry whose key starts with prefix, in key order, as a reader sees it.
// It holds no transaction while fn runs, so fn may take its time and writers may go on.
func (m *Manifest) Scan(prefix string, fn func(Entry) error) error {
	it := m.Iterate(prefix)
	for {
		e, ok, err := it.Next()
		if err != nil || !ok {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// Iterator walks the entries under a prefix in key order, a batch at a time.
type Iterator struct {
	m       *Manifest
	prefix  []byte
	after   []byte // last key returned; nil before the first batch
	buf     []Entry
	done    bool
	batches int
}

// releaseEvery is how many batches an iterator reads between two releases of the manifest's mapped
// pages (see fill).
const releaseEvery = 8

// Iterate returns an iterator over the entries whose key starts with prefix.
func (m *Manifest) Iterate(prefix string) *Iterator {
	return &Iterator{m: m, prefix: []byte(prefix)}
}

// Next returns the next entry; ok is false at the end.
func (it *Iterator) Next() (Entry, bool, error) {
	if len(it.buf) == 0 && !it.done {
		if err := it.fill(); err != nil {
			return Entry{}, false, err
		}
	}
	if len(it.buf) == 0 {
		return Entry{}, false, nil
	}
	e := it.buf[0]
	it.buf = it.buf[1:]
	return e, true, nil
}

func (it *Iterator) fill() error {
	it.buf = it.buf[:0]
	return it.m.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketFiles).Cursor()
		pending := tx.Bucket(bucketPending)
		if first, _ := pending.Cursor().First(); first == nil {
			pending = nil // no intents: no lookup per entry
		}
		var k, v []byte
		if it.after == nil {
			k, v = c.Seek(it.prefix)
		} else {
			k, v = c.Seek(it.after)
			if k != nil && bytes.Equal(k, it.after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(it.buf) < scanBatch; k, v = c.Next() {
			if !bytes.HasPrefix(k, it.prefix) {
				it.done = true
				return nil
			}
			e, found, err := it.m.readerViewOf(tx, pending, k, v)
			if err != nil {
				return err
			}
			it.after = append(it.after[:0], k...)
			if found {
				it.buf = append(it.buf, e)
			}
		}
		if k == nil {
			it.done = true
		}
		it.batches++
		if it.batches%releaseEvery == 0 {
			release(tx)
		}
		return nil
	})
}

// release tells the kernel that the pages of the manifest this process mapped may leave its
// resident set (madvise MADV_DONTNEED on bbolt's read-only shared mapping). A walk over a million
// entries otherwise leaves the whole file — a hundred megabytes — mapped and counted as the
// process's memory, although it is page cache the kernel can drop; later reads fault the pages back
// in from the page cache. Best effort: an error changes nothing but memory.
func release(tx *bolt.Tx) {
	info := tx.DB().Info()
	if info == nil || info.Data == 0 || tx.Size() <= 0 {
		return
	}
	// The mapping covers at least tx.Size() bytes while this transaction holds it. bbolt gives its
	// address as a uintptr, so the system call takes it as one.
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(tx.Size()), unix.MADV_DONTNEED)
}

// Commit ends a sync that changed something: it bumps the generation, records the source the entries
// came from, and stores the digest of the entries (SHA-256 over key, size, ETag and checksum in key
// order), which it returns with the totals. visit, if not nil, sees every entry on the way; extra, if
// not nil, is called after the last one, and what it returns is kept with the summary for Cached.
func (m *Manifest) Commit(source string, visit func(Entry), extra func() []byte) (wire.ManifestSummary, error) {
	s, err := m.summarize(visit)
	if err != nil {
		return s, err
	}
	var kept []byte
	if extra != nil {
		kept = extra()
	}
	err = m.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		s.Generation = int64(decodeUint(meta.Get(metaGeneration))) + 1
		if err := meta.Put(metaGeneration, encodeUint(uint64(s.Generation))); err != nil {
			return err
		}
		if err := meta.Put(metaSource, []byte(source)); err != nil {
			return err
		}
		if err := meta.Put(metaDigest, []byte(s.Digest)); err != nil {
			return err
		}
		v, err := json.Marshal(cachedSummary{Summary: s, Extra: kept})
		if err != nil {
			return err
		}
		if err := meta.Put(metaSummary, v); err != nil {
			return err
		}
		return meta.Delete(metaDirty)
	})
	if err != nil {
		return s, fmt.Errorf("committing manifest: %w", err)
	}
	return s, nil
}

type cachedSummary struct {
	Summary wire.ManifestSummary `json:"summary"`
	Extra   []byte               `json:"extra,omitempty"`
}

// Cached returns the summary and extra bytes the last Commit stored, when no entry has changed since:
// an unchanged sync reports them without reading a million entries. ok is false when an entry
// changed (a run that published files and did not commit), or nothing was stored.
func (m *Manifest) Cached() (s wire.ManifestSummary, extra []byte, ok bool, err error) {
	err = m.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(metaSummary)
		if v == nil || meta.Get(metaDirty) != nil || tx.Bucket(bucketPending).Stats().KeyN > 0 {
			return nil
		}
		var c cachedSummary
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("decoding stored summary: %w", err)
		}
		s, extra, ok = c.Summary, c.Extra, true
		return nil
	})
	return s, extra, ok, err
}

// State says whether entries changed since the last Commit (dirty), and the generation it made.
func (m *Manifest) State() (dirty bool, generation int64, err error) {
	err = m.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		dirty = meta.Get(metaDirty) != nil || tx.Bucket(bucketPending).Stats().KeyN > 0
		generation = int64(decodeUint(meta.Get(metaGeneration)))
		return nil
	})
	return dirty, generation, err
}

// GenerationAtLeast makes the next Commit's generation higher than floor: a manifest that begins
// again on a volume whose older generations are still there (package generations) must not number
// its own like theirs. It changes nothing when the manifest's generation is floor or more already.
func (m *Manifest) GenerationAtLeast(floor int64) error {
	// Read first: every sync asks, and a write transaction costs a commit (and an fsync) even when it
	// changes nothing.
	if _, gen, err := m.State(); err != nil || gen >= floor {
		return err
	}
	return m.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if int64(decodeUint(meta.Get(metaGeneration))) >= floor {
			return nil
		}
		return meta.Put(metaGeneration, encodeUint(uint64(floor)))
	})
}

// SetGeneration makes g the manifest's generation, so that the next Commit makes g+1, whether that is
// higher or lower than now: a follower numbers its copy as the seed numbered the generation it copies.
// Package generations keeps published trees from being numbered twice (cache.Options.Generation).
func (m *Manifest) SetGeneration(g int64) error {
	if g < 0 {
		return fmt.Errorf("setting generation %d: generations are not negative", g)
	}
	return m.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaGeneration, encodeUint(uint64(g)))
	})
}

// Remember computes the summary of the entries as Summary does and stores it with extra for Cached,
// without a new generation: for a manifest whose entries did not change since its last commit but
// that has no stored summary (one written before summaries were stored).
func (m *Manifest) Remember(visit func(Entry), extra func() []byte) (wire.ManifestSummary, error) {
	s, err := m.Summary(visit)
	if err != nil {
		return s, err
	}
	var kept []byte
	if extra != nil {
		kept = extra()
	}
	v, err := json.Marshal(cachedSummary{Summary: s, Extra: kept})
	if err != nil {
		return s, err
	}
	if err := m.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaSummary, v) }); err != nil {
		return s, fmt.Errorf("storing the manifest summary: %w", err)
	}
	return s, nil
}

// Summary returns the totals, generation and digest of the entries as they are now. visit, if not nil,
// sees every entry on the way.
func (m *Manifest) Summary(visit func(Entry)) (wire.ManifestSummary, error) {
	s, err := m.summarize(visit)
	if err != nil {
		return s, err
	}
	err = m.db.View(func(tx *bolt.Tx) error {
		s.Generation = int64(decodeUint(tx.Bucket(bucketMeta).Get(metaGeneration)))
		return nil
	})
	return s, err
}

func (m *Manifest) summarize(visit func(Entry)) (wire.ManifestSummary, error) {
	var s wire.ManifestSummary
	h := sha256.New()
	err := m.Scan("", func(e Entry) error {
		if visit != nil {
			visit(e)
		}
		s.Files++
		s.Bytes += e.Size
		fmt.Fprintf(h, "%s\t%d\t%s\t%s\n", e.Key, e.Size, e.ETag, e.Hash())
		return nil
	})
	s.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return s, err
}

// Source returns the source (s3://bucket/prefix at an endpoint) the entries were copied from, as
// recorded by the last commit; empty for a new manifest.
func (m *Manifest) Source() (string, error) {
	var s string
	err := m.db.View(func(tx *bolt.Tx) error {
		s = string(tx.Bucket(bucketMeta).Get(metaSource))
		return nil
	})
	return s, err
}

// PieceDigest returns the SHA256 of a file hashed in pieces, from the pieces' SHA-256 digests in order.
func PieceDigest(sums [][]byte) string {
	h := sha256.New()
	for _, s := range sums {
		h.Write(s)
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(sums))
}

// HashFile computes the SHA256 of the file r as the entry e records it: of the whole file, or of its
// pieces (PieceSize, PieceSizes) with PieceDigest. buf is the read buffer.
func HashFile(r io.ReaderAt, e Entry, buf []byte) (string, error) {
	if e.PieceSize <= 0 {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, e.Size), buf); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	var sums [][]byte
	for i, off := 0, int64(0); off < e.Size || i == 0; i++ {
		n := e.PieceSize
		if len(e.PieceSizes) > 0 {
			if i >= len(e.PieceSizes) {
				return "", fmt.Errorf("%s: %d piece sizes cover %d of %d bytes", e.Key, len(e.PieceSizes), off, e.Size)
			}
			n = e.PieceSizes[i]
		}
		n = min(n, e.Size-off)
		h := sha256.New()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(r, off, n), buf); err != nil {
			return "", err
		}
		sums = append(sums, h.Sum(nil))
		off += n
	}
	return PieceDigest(sums), nil
}

func encodeUint(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func decodeUint(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
