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

package s3serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pqcache/pqcache/cache/generations"
)

// markStride is how many lines of an object index one mark covers. A lookup reads at most this many
// lines (about 12 KiB, from the page cache) and decodes one; the marks of a generation take about
// (key length + 40) / markStride bytes per object: ~1 byte for the keys of a Parquet data set, 17 for
// keys of S3's maximum length.
const markStride = 64

// Index is a sparse index of one generation's object index on disk (generations.IndexPath): the key
// and the offset of every markStride-th line. Listings and lookups seek to the mark before the key
// they want and read forward, so the memory of a generation does not grow with the size of its
// objects' records, and a listing page costs its own lines, not a scan.
type Index struct {
	marks []mark
	// size and modTime identify the file the marks describe: a file that is not the same is indexed
	// again rather than read at offsets that mean something else.
	size    int64
	modTime time.Time
}

type mark struct {
	key string
	off int64
}

// IndexFile is one request's view of a generation's index: the shared marks and the open file.
type IndexFile struct {
	*Index
	f *os.File
}

// Close closes the index file; the marks stay cached.
func (x IndexFile) Close() { _ = x.f.Close() } // only read

// NewIndexFile reads the object index in f once (BuildIndex) and returns f with its marks; f is the
// caller's to close (IndexFile.Close).
func NewIndexFile(f *os.File) (IndexFile, error) {
	idx, err := BuildIndex(f)
	if err != nil {
		return IndexFile{}, err
	}
	return IndexFile{Index: idx, f: f}, nil
}

// Size is the index file's size when it was indexed.
func (x IndexFile) Size() int64 { return x.size }

// ModTime is the index file's modification time when it was indexed.
func (x IndexFile) ModTime() time.Time { return x.modTime }

// Contents reads the whole index file, as it was indexed.
func (x IndexFile) Contents() *io.SectionReader { return io.NewSectionReader(x.f, 0, x.size) }

// ErrIndexOrder says an object index is not in strict key order: it was not written by Publish.
var ErrIndexOrder = errors.New("the object index is not in key order")

// BuildIndex reads the object index in f once, checking its order, and keeps its marks.
func BuildIndex(f *os.File) (*Index, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	x := &Index{size: st.Size(), modTime: st.ModTime()}
	sc := x.scanner(f, 0)
	var prev []byte
	n := 0
	for off := int64(0); sc.Scan(); n++ {
		line := sc.Bytes()
		key, err := generations.ObjectKey(line)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
		if n > 0 && bytes.Compare(prev, key) >= 0 {
			return nil, fmt.Errorf("reading %s: %w: %q after %q", f.Name(), ErrIndexOrder, key, prev)
		}
		if n%markStride == 0 {
			x.marks = append(x.marks, mark{key: string(key), off: off})
		}
		prev = append(prev[:0], key...)
		off += int64(len(line)) + 1
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	x.marks = slices.Clip(x.marks)
	return x, nil
}

// scanner reads the lines of the index from off on.
func (x *Index) scanner(f *os.File, off int64) *bufio.Scanner {
	sc := bufio.NewScanner(io.NewSectionReader(f, off, x.size-off))
	sc.Buffer(make([]byte, 0, 16<<10), generations.MaxIndexLine)
	return sc
}

// seek returns the offset of the last mark whose key is at most key: every line from there on that
// comes before key is skipped by the reader.
func (x *Index) seek(key string) int64 {
	i, found := slices.BinarySearchFunc(x.marks, key, func(m mark, k string) int { return strings.Compare(m.key, k) })
	if !found && i > 0 {
		i--
	}
	if i >= len(x.marks) {
		return 0 // no marks: an empty index
	}
	return x.marks[i].off
}

// Find returns the object named key.
func (x IndexFile) Find(key string) (generations.Object, bool, error) {
	sc, want := x.scanner(x.f, x.seek(key)), []byte(key)
	for sc.Scan() {
		k, err := generations.ObjectKey(sc.Bytes())
		if err != nil {
			return generations.Object{}, false, err
		}
		switch c := bytes.Compare(k, want); {
		case c == 0:
			o, err := generations.ParseObject(sc.Bytes())
			return o, err == nil, err
		case c > 0:
			return generations.Object{}, false, nil
		}
	}
	return generations.Object{}, false, sc.Err()
}

// After returns up to limit objects whose keys start with prefix and sort after marker, in key
// order, and whether more follow.
func (x IndexFile) After(prefix, marker string, limit int) (objs []generations.Object, more bool, err error) {
	from := max(prefix, marker)
	sc := x.scanner(x.f, x.seek(from))
	for sc.Scan() {
		k, err := generations.ObjectKey(sc.Bytes())
		if err != nil {
			return nil, false, err
		}
		if string(k) < from || string(k) == marker { // the marker itself was listed already
			continue
		}
		if !bytes.HasPrefix(k, []byte(prefix)) {
			return objs, false, nil
		}
		if len(objs) == limit {
			return objs, true, nil
		}
		o, err := generations.ParseObject(sc.Bytes())
		if err != nil {
			return nil, false, err
		}
		objs = append(objs, o)
	}
	return objs, false, sc.Err()
}

// IndexCache keeps the marks of the last generations served: a client lists a generation page by
// page and then fetches its files, and reading the whole index once per request would cost a scan of
// the whole data set each time. Its zero value keeps DefaultCachedIndexes generations.
type IndexCache struct {
	// Max bounds how many generations' marks are kept; 0 means DefaultCachedIndexes.
	Max int

	mu      sync.Mutex
	entries []cachedIndex // most recently used last
}

type cachedIndex struct {
	root string
	g    int64
	idx  *Index
}

// DefaultCachedIndexes bounds a cache by default: a peer serves few generations at a time (the
// current one of each Dataset, and the one before while followers catch up). Marks are small
// (markStride), so eight generations of a million objects hold a few MiB.
const DefaultCachedIndexes = 8

// Open opens generation g's object index under root, with its marks, indexing it if it has not
// been, or if the file changed since.
func (c *IndexCache) Open(root string, g int64) (IndexFile, error) {
	f, err := generations.OpenObjects(root, g)
	if err != nil {
		return IndexFile{}, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // only read
		return IndexFile{}, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	if idx := c.lookup(root, g, st); idx != nil {
		return IndexFile{Index: idx, f: f}, nil
	}
	idx, err := BuildIndex(f)
	if err != nil {
		_ = f.Close() // only read
		return IndexFile{}, err
	}
	return IndexFile{Index: c.store(root, g, idx), f: f}, nil
}

// lookup returns the cached marks of the file st describes, if any, as the most recently used.
func (c *IndexCache) lookup(root string, g int64, st os.FileInfo) *Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.root == root && e.g == g {
			if e.idx.size != st.Size() || !e.idx.modTime.Equal(st.ModTime()) {
				return nil // rebuilt and stored anew
			}
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.idx
		}
	}
	return nil
}

// store caches idx for generation g of root, in place of what was there, and forgets the least
// recently used generations beyond the cache's bound.
func (c *IndexCache) store(root string, g int64, idx *Index) *Index {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.root == root && e.g == g {
			if e.idx.size == idx.size && e.idx.modTime.Equal(idx.modTime) {
				return e.idx // another request indexed it meanwhile: keep one copy in memory
			}
			c.entries = slices.Delete(c.entries, i, i+1)
			break
		}
	}
	c.entries = append(c.entries, cachedIndex{root: root, g: g, idx: idx})
	limit := c.Max
	if limit <= 0 {
		limit = DefaultCachedIndexes
	}
	if len(c.entries) > limit {
		c.entries = slices.Delete(c.entries, 0, len(c.entries)-limit)
	}
	return idx
}

// Forget drops generation g of root: it is no longer served.
func (c *IndexCache) Forget(root string, g int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(e cachedIndex) bool { return e.root == root && e.g == g })
}
