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

package generations

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/manifest"
)

// build makes generation g's tree under .building-<g> from entries, records it, and renames it to
// <g>. A failure removes the partial tree (or leaves it to the next Publish's cleanup).
func (st *state) build(ctx context.Context, root string, g int64, entries Entries, now time.Time, p Policy) (meta, error) {
	name := strconv.FormatInt(g, 10)
	tmp := buildingPrefix + name
	if err := unix.Mkdirat(st.d, tmp, 0o755); err != nil {
		return meta{}, &os.PathError{Op: "mkdir", Path: filepath.Join(st.dir, tmp), Err: err}
	}
	var (
		m   meta
		idx *indexWriter
	)
	b, err := newBuilder(root, st.d, tmp)
	if err == nil && p.Index {
		if idx, err = newIndexWriter(st.d); err != nil {
			_ = b.close() // nothing was linked yet; the index's error is the one to report
		}
	}
	if err == nil {
		n := 0
		err = entries(func(e manifest.Entry) error {
			// Checked now and then: a context check per file would cost more than some links.
			if n%4096 == 0 {
				if err := context.Cause(ctx); err != nil {
					return err
				}
			}
			n++
			if idx != nil {
				if err := idx.add(e); err != nil {
					return err
				}
			}
			return b.add(e.Key)
		})
		if cerr := b.close(); err == nil {
			err = cerr
		}
		m = meta{Generation: g, Files: b.files, Bytes: b.bytes, Published: now, Source: p.Source}
	}
	if err == nil && idx != nil {
		err = idx.commit(g)
	}
	if err == nil {
		err = writeMeta(st.d, m)
	}
	if err == nil && p.Durable {
		// Every link and the record reach the disk before the tree gets the name that says it is
		// whole.
		err = syncFS(st.d, st.dir)
	}
	if err == nil {
		if err = unix.Renameat(st.d, tmp, st.d, name); err != nil {
			err = fmt.Errorf("renaming %s to %s: %w", tmp, name, err)
		}
	}
	if err != nil {
		if idx != nil {
			idx.abort()
		}
		// Best effort, err is what failed: a partial tree left behind goes in the next Publish's cleanup.
		_ = unix.Unlinkat(st.d, name+metaSuffix, 0)
		_ = unix.Unlinkat(st.d, name+objectsSuffix, 0)
		_ = os.RemoveAll(filepath.Join(st.dir, tmp))
		return meta{}, err
	}
	return m, nil
}

// builder links files into a new tree. Keys come in key order, so the keys of one directory come
// together (all strings with a common prefix are adjacent in sorted order): it keeps the open
// directories of the current key's path on both sides, source and tree, and creates and opens each
// directory once. The files go in batches of one directory to a few workers, which link each with
// one fstatat and one linkat relative to the directory's descriptors, without path lookups: the
// caller's walk of the manifest (a bbolt read and a JSON decode per entry) overlaps the linking,
// and directories are linked into in parallel. Keys in another order still work, only slower.
type builder struct {
	src, dst int     // the cache root and the tree's root
	stack    []level // open directories of the last key's path, outermost first
	batch    job     // files of the innermost directory not yet handed to a worker

	jobs   chan job
	wg     sync.WaitGroup
	failed atomic.Bool
	mu     sync.Mutex
	err    error // the first worker error
	files  int64
	bytes  int64
}

type level struct {
	name     string
	src, dst int
}

// job is a batch of files of one directory; the worker closes its descriptors (duplicates of the
// builder's, which moves on).
type job struct {
	prefix   string // the directory's part of the keys, for errors
	src, dst int
	names    []string
}

// batchSize bounds a job: small enough to spread a large directory's files among the workers'
// queue, large enough that handing over costs nothing per file.
const batchSize = 512

func newBuilder(root string, d int, tree string) (*builder, error) {
	src, err := openDir(unix.AT_FDCWD, root)
	if err != nil {
		return nil, err
	}
	dst, err := openDir(d, tree)
	if err != nil {
		closeDir(src)
		return nil, err
	}
	// Linking is system calls: more workers than cores only queue in the kernel. Two at least, so
	// that the caller's walk overlaps the linking even on one core.
	workers := max(2, min(runtime.GOMAXPROCS(0), 4))
	b := &builder{src: src, dst: dst, jobs: make(chan job, 2*workers)}
	for range workers {
		b.wg.Go(b.work)
	}
	return b, nil
}

// close waits for the workers and returns the first error they met.
func (b *builder) close() error {
	b.flush()
	close(b.jobs)
	b.wg.Wait()
	b.truncate(0)
	closeDir(b.src)
	closeDir(b.dst)
	return b.err
}

func (b *builder) work() {
	var files, bytes int64
	for j := range b.jobs {
		if !b.failed.Load() {
			for _, name := range j.names {
				n, err := linkFile(j.src, j.dst, name)
				if errors.Is(err, unix.ENOENT) {
					b.fail(&MissingError{Key: j.prefix + name})
					break
				}
				if err != nil {
					b.fail(fmt.Errorf("linking %s%s: %w", j.prefix, name, err))
					break
				}
				files++
				bytes += n
			}
		}
		closeDir(j.src)
		closeDir(j.dst)
	}
	linked.Add(files)
	b.mu.Lock()
	b.files += files
	b.bytes += bytes
	b.mu.Unlock()
}

func (b *builder) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	b.failed.Store(true)
}

// linkFile links name from directory src into dst, and returns its size.
func linkFile(src, dst int, name string) (int64, error) {
	var s unix.Stat_t
	if err := unix.Fstatat(src, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	if s.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, errors.New("not a regular file")
	}
	if err := unix.Linkat(src, name, dst, name, 0); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return 0, errors.New("listed twice")
		}
		return 0, err
	}
	return s.Size, nil
}

// flush hands the pending batch to a worker.
func (b *builder) flush() {
	if len(b.batch.names) == 0 {
		return
	}
	src, dst := b.src, b.dst
	if n := len(b.stack); n > 0 {
		src, dst = b.stack[n-1].src, b.stack[n-1].dst
	}
	j := b.batch
	var err error
	if j.src, err = unix.Dup(src); err == nil {
		if j.dst, err = unix.Dup(dst); err != nil {
			closeDir(j.src)
		}
	}
	b.batch = job{prefix: j.prefix}
	if err != nil {
		b.fail(fmt.Errorf("linking in %s: %w", j.prefix, err))
		return
	}
	b.jobs <- j
}

// truncate closes the directories below depth.
func (b *builder) truncate(depth int) {
	if depth == len(b.stack) {
		return
	}
	b.flush()
	for _, l := range b.stack[depth:] {
		closeDir(l.src)
		closeDir(l.dst)
	}
	b.stack = b.stack[:depth]
}

// add queues DIR/<key> to be linked into the tree at <key>.
func (b *builder) add(key string) error {
	if b.failed.Load() {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.err
	}
	if err := b.addKey(key); err != nil {
		return fmt.Errorf("linking %s: %w", key, err)
	}
	return nil
}

func (b *builder) addKey(key string) error {
	rest := key
	depth := 0
	for {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			break
		}
		comp := rest[:i]
		rest = rest[i+1:]
		if err := checkSegment(comp, depth); err != nil {
			return err
		}
		if depth < len(b.stack) && b.stack[depth].name == comp {
			depth++
			continue
		}
		b.truncate(depth)
		if err := b.push(comp); err != nil {
			return err
		}
		depth++
	}
	b.truncate(depth)
	if err := checkSegment(rest, depth); err != nil {
		return err
	}
	if len(b.batch.names) == 0 {
		b.batch.prefix = key[:len(key)-len(rest)]
	}
	b.batch.names = append(b.batch.names, rest)
	if len(b.batch.names) == batchSize {
		b.flush()
	}
	return nil
}

// push opens directory comp below the innermost open one, on both sides, creating it in the tree.
func (b *builder) push(comp string) error {
	psrc, pdst := b.src, b.dst
	if n := len(b.stack); n > 0 {
		psrc, pdst = b.stack[n-1].src, b.stack[n-1].dst
	}
	src, err := openDir(psrc, comp)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(pdst, comp, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		closeDir(src)
		return err
	}
	dst, err := openDir(pdst, comp)
	if err != nil {
		closeDir(src)
		return err
	}
	b.flush()
	b.stack = append(b.stack, level{name: comp, src: src, dst: dst})
	return nil
}

// checkSegment refuses what plan.ValidateKey refuses that could escape the tree or the root; the
// keys come from the manifest, which only holds validated keys, so this is a cheap second guard.
func checkSegment(seg string, depth int) error {
	switch {
	case seg == "" || seg == "." || seg == "..":
		return fmt.Errorf("bad path segment %q", seg)
	case depth == 0 && seg == manifest.Dir:
		return fmt.Errorf("inside the reserved %s directory", manifest.Dir)
	}
	return nil
}

// MissingError is a build that found a file of the manifest missing from the stable path: removed by
// hand, or lost. The generation is not published; the caller should have the file copied again.
type MissingError struct {
	Key string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s is in the manifest but not on the volume", e.Key)
}
