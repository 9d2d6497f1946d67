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
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
)

// holdAttempts bounds how often Hold follows current when the generation it named was removed
// before it could be locked; each retry means a Publish switched current meanwhile.
const holdAttempts = 16

// errMoved says a generation's directory was renamed away (removed) while Hold locked it.
var errMoved = errors.New("generation removed while locking it")

// A Lease keeps a generation on the volume until Release: a shared flock on its directory, which
// the garbage collector of every process on the node respects.
type Lease struct {
	// Dir is the absolute path of the generation's tree; empty for a no-op lease.
	Dir string
	// Generation is the generation held; 0 for a no-op lease.
	Generation int64
	// Path is what the caller reads: Dir for Hold; for HoldPath, the path given, resolved into the
	// held tree, or unchanged when it names no generation.
	Path string

	fd   int // -1 when nothing is held
	once sync.Once
}

// Release lets the generation go. It may be called more than once, and on a nil Lease.
//
// A lease that is never released holds its generation until the process exits: deliberately, no
// finalizer releases it, since a caller that keeps only Dir still reads the tree.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		if l.fd >= 0 {
			closeDir(l.fd)
			l.fd = -1
		}
	})
}

// File returns a duplicate of the open directory that holds the lease, for a child process to
// inherit (exec.Cmd.ExtraFiles): flock belongs to the open file, which the duplicate shares, so the
// generation stays held while any process keeps it open, whichever exits first. The caller closes it
// (after starting the child). Nil for a no-op lease.
func (l *Lease) File() (*os.File, error) {
	if l == nil || l.fd < 0 {
		return nil, nil
	}
	fd, err := unix.FcntlInt(uintptr(l.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sharing the lease on %s: %w", l.Dir, err)
	}
	return os.NewFile(uintptr(fd), l.Dir), nil
}

// Hold holds generation g of the cache at root (g == 0: the one current names) and returns its
// tree. It fails with an error wrapping fs.ErrNotExist when g is not kept, or when no generation
// was ever published.
func Hold(root string, g int64) (*Lease, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	for range holdAttempts {
		n := g
		if g == 0 {
			d, err := openDir(unix.AT_FDCWD, dir)
			if err != nil {
				return nil, fmt.Errorf("no generations in %s: %w", root, err)
			}
			n, err = readCurrent(d, dir)
			closeDir(d)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				return nil, fmt.Errorf("no current generation in %s: %w", root, fs.ErrNotExist)
			}
		}
		path := filepath.Join(dir, strconv.FormatInt(n, 10))
		fd, err := lockShared(path)
		if err == nil {
			return &Lease{Dir: path, Generation: n, Path: path, fd: fd}, nil
		}
		if !errors.Is(err, errMoved) && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("holding generation %d of %s: %w", n, root, err)
		}
		if g != 0 {
			return nil, fmt.Errorf("generation %d of %s is not kept: %w", g, root, fs.ErrNotExist)
		}
		// current moved on and its old target was removed between readlink and lock: follow it.
		holdRetries.Add(1)
	}
	return nil, fmt.Errorf("holding the current generation of %s: it changed %d times while locking it", root, holdAttempts)
}

// lockShared opens the tree at path, locks it shared, and checks that path still names it: the GC
// renames a tree away while it holds the exclusive lock, so a tree opened just before that is
// locked only after it lost its name.
func lockShared(path string) (int, error) {
	fd, err := openDir(unix.AT_FDCWD, path)
	if err != nil {
		return -1, err
	}
	if err := flock(fd, unix.LOCK_SH); err != nil {
		closeDir(fd)
		return -1, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	var held, named unix.Stat_t
	if err := unix.Fstat(fd, &held); err != nil {
		closeDir(fd)
		return -1, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := unix.Lstat(path, &named); err != nil || named.Dev != held.Dev || named.Ino != held.Ino {
		closeDir(fd)
		return -1, errMoved
	}
	return fd, nil
}

// HoldPath holds the generation a path names, for a reader given a data directory: a path that is,
// or is inside, DIR/.pqcache/generations/<n> or DIR/.pqcache/generations/current holds that
// generation (current: the one it names now), and Lease.Path is the same path inside the held tree
// (current resolved to its number, once). Any other path gets a no-op lease with Path unchanged.
// When the path only reaches a generation through symlinks elsewhere, they are resolved first.
func HoldPath(path string) (*Lease, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	root, g, rest, ok := splitGenerationPath(abs)
	if !ok {
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			root, g, rest, ok = splitGenerationPath(resolved)
		}
	}
	if !ok {
		return &Lease{Path: path, fd: -1}, nil
	}
	l, err := Hold(root, g)
	if err != nil {
		return nil, err
	}
	l.Path = filepath.Join(l.Dir, rest)
	return l, nil
}

// splitGenerationPath splits a clean absolute path at .pqcache/generations/<n|current>: the cache
// root, the generation (0 for current) and the rest of the path inside the tree.
func splitGenerationPath(p string) (root string, g int64, rest string, ok bool) {
	parts := strings.Split(filepath.ToSlash(p), "/")
	dirParts := strings.Split(Dir, "/")
	for i := 0; i+len(dirParts) < len(parts); i++ {
		if !slices.Equal(parts[i:i+len(dirParts)], dirParts) {
			continue
		}
		name := parts[i+len(dirParts)]
		if name == currentLink {
			g = 0
		} else if g, ok = parseGeneration(name); !ok {
			return "", 0, "", false
		}
		root = strings.Join(parts[:i], "/")
		if root == "" {
			root = "/"
		}
		rest = strings.Join(parts[i+len(dirParts)+1:], "/")
		return filepath.FromSlash(root), g, filepath.FromSlash(rest), true
	}
	return "", 0, "", false
}

// List returns the generations kept under root, newest first, and the one current names (0 when
// none). It only reads, so it works on a read-only mount; Pinned is never set (only the sync knows).
func List(root string) ([]wire.GenerationInfo, int64, error) {
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	d, err := openDir(unix.AT_FDCWD, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listing generations: %w", err)
	}
	defer closeDir(d)
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("listing generations: %w", err)
	}
	var out []wire.GenerationInfo
	for _, de := range des {
		n, ok := parseGeneration(de.Name())
		if !ok || !de.IsDir() {
			continue
		}
		info := wire.GenerationInfo{Generation: n}
		// A tree whose record is torn is still whole; the next Publish counts it again.
		if m, err := readMeta(d, n); err == nil {
			info.Files, info.Bytes, info.Published = m.Files, m.Bytes, m.Published
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b wire.GenerationInfo) int { return cmp.Compare(b.Generation, a.Generation) })
	cur, err := readCurrent(d, dir)
	if err != nil {
		return out, 0, err
	}
	return out, cur, nil
}
