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
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// dirent is one entry of a directory as getdents64 returns it: the inode and type come free with
// the name, without a stat.
type dirent struct {
	name string
	ino  uint64
	typ  uint8 // unix.DT_*; DT_UNKNOWN on filesystems that do not fill it
}

// lister reads whole directories with one reused buffer.
type lister struct{ buf []byte }

func newLister() *lister { return &lister{buf: make([]byte, 64<<10)} }

// list returns the entries of the directory open at fd, without "." and "..". It reads them all
// before returning, so callers may recurse with the same lister.
func (l *lister) list(fd int) ([]dirent, error) {
	// From the start, also when fd was listed before (the current tree's root is, once per old tree).
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []dirent
	for {
		n, err := unix.ReadDirent(fd, l.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
		for b := l.buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("malformed directory entry")
			}
			ino := binary.NativeEndian.Uint64(b[0:8])
			typ := b[18]
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			out = append(out, dirent{name: string(name), ino: ino, typ: typ})
		}
	}
}

// typeOf returns e's type, with an lstat when the filesystem left it out.
func typeOf(dir int, e dirent) (uint8, error) {
	if e.typ != unix.DT_UNKNOWN {
		return e.typ, nil
	}
	var s unix.Stat_t
	if err := unix.Fstatat(dir, e.name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	if s.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.DT_DIR, nil
	}
	return unix.DT_REG, nil
}

// extraBytes is the space the trees olds take beyond cur's: the sizes of the distinct inodes they
// link that cur does not. It walks each old tree beside cur's, directory by directory, and compares
// inodes by name from getdents; it stats only the files whose inode differs from cur's file of the
// same name (a replaced or deleted file), each inode once. A file that cur holds under another name
// (never done by a sync: each publish is a new file) would be counted.
func extraBytes(ctx context.Context, d int, cur int64, olds []int64) (int64, error) {
	extraWalks.Add(1)
	w := &extraWalker{l: newLister(), seen: map[uint64]struct{}{}}
	curfd, err := openDir(d, strconv.FormatInt(cur, 10))
	if err != nil {
		return 0, fmt.Errorf("measuring generations: %w", err)
	}
	defer closeDir(curfd)
	for _, n := range olds {
		fd, err := openDir(d, strconv.FormatInt(n, 10))
		if err != nil {
			return 0, fmt.Errorf("measuring generation %d: %w", n, err)
		}
		err = w.walk(ctx, fd, curfd)
		closeDir(fd)
		if err != nil {
			return 0, fmt.Errorf("measuring generation %d: %w", n, err)
		}
	}
	return w.total, nil
}

type extraWalker struct {
	l     *lister
	seen  map[uint64]struct{} // inodes counted
	total int64
}

// walk adds what the directory old holds beyond cur (-1 when cur has no such directory).
func (w *extraWalker) walk(ctx context.Context, old, cur int) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	olds, err := w.l.list(old)
	if err != nil {
		return err
	}
	var curIno map[string]uint64
	if cur >= 0 {
		curs, err := w.l.list(cur)
		if err != nil {
			return err
		}
		curIno = make(map[string]uint64, len(curs))
		for _, e := range curs {
			curIno[e.name] = e.ino
		}
	}
	for _, e := range olds {
		typ, err := typeOf(old, e)
		if err != nil {
			return err
		}
		if typ == unix.DT_DIR {
			child, err := openDir(old, e.name)
			if err != nil {
				return err
			}
			cchild := -1
			if _, ok := curIno[e.name]; ok {
				if fd, err := openDir(cur, e.name); err == nil { // a file of that name in cur: ENOTDIR
					cchild = fd
				}
			}
			err = w.walk(ctx, child, cchild)
			closeDir(child)
			if cchild >= 0 {
				closeDir(cchild)
			}
			if err != nil {
				return err
			}
			continue
		}
		if ino, ok := curIno[e.name]; ok && ino == e.ino {
			continue
		}
		if _, ok := w.seen[e.ino]; ok {
			continue
		}
		var s unix.Stat_t
		if err := unix.Fstatat(old, e.name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		w.seen[e.ino] = struct{}{}
		w.total += s.Size
	}
	return nil
}

// recount counts a complete tree whose record is lost (a crash without Durable tore it), and
// writes the record again. Published is the tree's modification time: about when it was built.
func (st *state) recount(g int64) (meta, error) {
	name := strconv.FormatInt(g, 10)
	fd, err := openDir(st.d, name)
	if err != nil {
		return meta{}, fmt.Errorf("counting generation %d: %w", g, err)
	}
	defer closeDir(fd)
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		return meta{}, fmt.Errorf("counting generation %d: %w", g, err)
	}
	m := meta{Generation: g, Published: time.Unix(s.Mtim.Unix()).UTC()}
	if err := count(newLister(), fd, &m); err != nil {
		return meta{}, fmt.Errorf("counting generation %d: %w", g, err)
	}
	if err := writeMeta(st.d, m); err != nil {
		return meta{}, err
	}
	return m, nil
}

func count(l *lister, dir int, m *meta) error {
	es, err := l.list(dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		typ, err := typeOf(dir, e)
		if err != nil {
			return err
		}
		if typ == unix.DT_DIR {
			child, err := openDir(dir, e.name)
			if err != nil {
				return err
			}
			err = count(l, child, m)
			closeDir(child)
			if err != nil {
				return err
			}
			continue
		}
		var s unix.Stat_t
		if err := unix.Fstatat(dir, e.name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "stat", Path: e.name, Err: err}
		}
		m.Files++
		m.Bytes += s.Size
	}
	return nil
}
