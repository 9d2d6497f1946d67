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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/manifest"
)

// objectsSuffix names a generation's object index: <g>.objects beside <g>.json.
const objectsSuffix = ".objects"

// Object is one file of a generation as a peer serves it: what the bucket said about the object the
// file was copied from, so that a follower's manifest comes out equal to the seed's and every byte it
// fetches is checked against what the bucket vouched for.
type Object struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"lastModified"`
	ETag         string    `json:"etag"`
	// Checksum is the full-object checksum the seed matched, "<ALGORITHM>:<value>"; empty when the
	// store vouched for the ETag only.
	Checksum string `json:"checksum,omitempty"`
	// Parts are the upload's part sizes of an object whose ETag or checksum covers its parts.
	Parts []int64 `json:"parts,omitempty"`
}

// ErrNotIndexed says a generation has no object index: it was published without Policy.Index, or
// it is gone.
var ErrNotIndexed = errors.New("generation has no object index")

// IndexPath is where generation g's object index lies under root. The index is one JSON document
// (an Object) per line, in key order, each line starting with its key: a reader can find and list
// keys in it without holding the whole index in memory (OpenObjects, ObjectKey, ParseObject).
func IndexPath(root string, g int64) string {
	return filepath.Join(root, filepath.FromSlash(Dir), strconv.FormatInt(g, 10)+objectsSuffix)
}

// OpenObjects opens generation g's object index under root for reading (IndexPath).
func OpenObjects(root string, g int64) (*os.File, error) {
	f, err := os.Open(IndexPath(root, g))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("generation %d: %w", g, ErrNotIndexed)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the object index of generation %d: %w", g, err)
	}
	return f, nil
}

// MaxIndexLine bounds one line of an object index: a key of at most 1,024 bytes, escaped, and up to
// 10,000 upload parts.
const MaxIndexLine = 1 << 20

// keyPrefix is how every line that indexWriter writes starts: Object's first field.
var keyPrefix = []byte(`{"key":"`)

// ObjectKey returns the key of one line of an object index without decoding the rest of the line:
// finding a key among a million costs a few byte comparisons per line. The result may share
// line's memory.
func ObjectKey(line []byte) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(line, keyPrefix); ok {
		end := bytes.IndexByte(rest, '"')
		if end >= 0 && plainJSONString(rest[:end]) {
			return rest[:end], nil // no escape: the JSON string is the key's bytes
		}
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(line, &k); err != nil {
		return nil, fmt.Errorf("reading an object index line: %w", err)
	}
	return []byte(k.Key), nil
}

// plainJSONString says whether b, the body of a JSON string, is its own value: no escape, no control
// character, valid UTF-8. Otherwise encoding/json decides (it reads invalid UTF-8 as U+FFFD and refuses
// control characters), so that ObjectKey always returns the key ParseObject reads: a follower found no
// object whose key held a byte that is not UTF-8 in a peer's manifest (FuzzFetchManifest).
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// ParseObject decodes one line of an object index.
func ParseObject(line []byte) (Object, error) {
	var o Object
	if err := json.Unmarshal(line, &o); err != nil {
		return Object{}, fmt.Errorf("reading an object index line: %w", err)
	}
	return o, nil
}

// Objects reads generation g's object index under root, in key order, whole: for tests and small
// generations (a peer reads the index line by line instead).
func Objects(root string, g int64) ([]Object, error) {
	f, err := OpenObjects(root, g)
	if err != nil {
		return nil, err
	}
	path := f.Name()
	defer func() { _ = f.Close() }() // only read
	var objs []Object
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	for dec.More() {
		var o Object
		if err := dec.Decode(&o); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// indexWriter writes an object index into a temporary file of the generations directory, named
// <g>.objects by commit once complete.
type indexWriter struct {
	d   int
	tmp string
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
}

func newIndexWriter(d int) (*indexWriter, error) {
	tmp := tmpPrefix + randomSuffix()
	fd, err := unix.Openat(d, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	w := bufio.NewWriterSize(f, 1<<16)
	return &indexWriter{d: d, tmp: tmp, f: f, w: w, enc: json.NewEncoder(w)}, nil
}

func (x *indexWriter) add(e manifest.Entry) error {
	return x.enc.Encode(Object{Key: e.Key, Size: e.Size, LastModified: e.LastModified, ETag: e.ETag, Checksum: e.Checksum, Parts: e.Parts})
}

// commit names the index generation g's. It is flushed with the tree (syncfs of a durable Publish).
func (x *indexWriter) commit(g int64) error {
	err := x.w.Flush()
	if cerr := x.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(x.d, x.tmp, x.d, strconv.FormatInt(g, 10)+objectsSuffix)
	}
	if err != nil {
		_ = unix.Unlinkat(x.d, x.tmp, 0) // the write's error is the one to report
		return fmt.Errorf("writing the object index of generation %d: %w", g, err)
	}
	return nil
}

// abort drops an index that will not be committed. Errors are dropped: the file is removed unread,
// and the caller returns the error that made it abort (a leftover temporary file is removed by the
// next Publish's cleanup).
func (x *indexWriter) abort() {
	_ = x.f.Close()
	_ = unix.Unlinkat(x.d, x.tmp, 0)
}

// writeIndex writes the object index of a tree that is already whole.
func writeIndex(ctx context.Context, d int, g int64, entries Entries) error {
	x, err := newIndexWriter(d)
	if err != nil {
		return err
	}
	n := 0
	err = entries(func(e manifest.Entry) error {
		if n++; n%4096 == 0 {
			if err := context.Cause(ctx); err != nil {
				return err
			}
		}
		return x.add(e)
	})
	if err != nil {
		x.abort()
		return fmt.Errorf("indexing generation %d: %w", g, err)
	}
	return x.commit(g)
}
