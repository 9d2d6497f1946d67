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

// Package generations keeps whole, consistent snapshots ("generations") of a pqcache directory, for
// readers that must not see a sync half done.
//
// A sync publishes file by file into DIR/<key>: each file is replaced atomically, but a reader that
// opens several files while a sync runs can mix old and new ones. After a manifest commit, Publish
// makes generation g a tree of hard links, one per manifest entry:
//
//	DIR/.pqcache/generations/<g>/<key>   the file DIR/<key> was when g was committed (the same inode)
//	DIR/.pqcache/generations/<g>.json    files, bytes, when it was published and superseded
//	DIR/.pqcache/generations/<g>.objects what the bucket said of each file (Policy.Index, Objects)
//	DIR/.pqcache/generations/current     symlink to "<g>", switched atomically (rename over it)
//
// Hard links copy no data and take no inode per file (only one per directory): a generation shares
// its files with the stable path and with the other generations. The sync never writes a published
// file in place; it renames a new file over DIR/<key> or unlinks it, so the old inode lives on,
// unchanged, in the trees that link it, until the last of them is removed.
//
// A tree is built under .building-<g> and renamed to <g> when complete, so a numbered directory is
// always whole; the next Publish removes what a crash left (.building-*, .deleting-*, temporary
// files). Generation numbers are the manifest's: the same number must always mean the same contents.
//
// Readers hold a generation with Hold or HoldPath: a shared flock(2) on the generation's directory.
// The garbage collector removes a generation only after taking an exclusive, non-blocking flock on
// it, and renames it away while it holds that lock, so a reader either locks first (and the
// generation stays) or finds the path gone and retries with the new current. flock needs no write
// access, so it works on a read-only mount, and across containers and pods on one node: they share
// the kernel's lock on the same inode. It does not reach across nodes (NFS and other network
// filesystems): readers elsewhere rely on Policy.Pinned and Policy.MinAge.
package generations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
)

// Dir is where the generations live, relative to the cache root.
const Dir = manifest.Dir + "/generations"

const (
	currentLink    = "current"
	summaryFile    = "summary.json"
	buildingPrefix = ".building-"
	deletingPrefix = ".deleting-"
	tmpPrefix      = ".tmp-"
	metaSuffix     = ".json"
)

// DefaultMaxKept is the cap on kept generations when Policy.MaxKept is 0. The Dataset status lists
// at most 32.
const DefaultMaxKept = 32

// Policy says which generations Publish keeps besides the current one.
type Policy struct {
	// Keep is how many of the newest generations are kept, counting the current one (at least 1).
	Keep int
	// MinAge keeps an older generation that stopped being current less than MinAge ago: a grace
	// period for readers that resolved `current` without holding it.
	MinAge time.Duration
	// MaxKept caps Keep and the generations MinAge keeps (DefaultMaxKept when 0); the oldest of
	// those MinAge keeps go first. Pinned and held generations are never removed, whatever the cap.
	MaxKept int
	// Pinned are generations a reader will read that cannot hold them itself (a pod on another node,
	// a Job not started yet): they are never removed while pinned.
	Pinned []int64
	// Durable flushes the filesystem (syncfs) before a new tree is renamed into place and after the
	// current link is switched, so that a crash never leaves current naming a partial tree.
	Durable bool
	// Index also writes the generation's object index (<g>.objects, see Objects) before its tree gets
	// its name: what a node agent needs to serve the generation to its peers as a bucket would.
	Index bool
	// Source names where the generation's files were copied from (cache.SourceID), recorded with it:
	// a Dataset's source may change while readers hold its older generations, and what serves a
	// generation under the source's keys must serve it only under the keys it came from.
	Source string
}

// meta is what DIR/.pqcache/generations/<g>.json holds.
type meta struct {
	Generation int64     `json:"generation"`
	Files      int64     `json:"files"`
	Bytes      int64     `json:"bytes"`
	Published  time.Time `json:"published"`
	// Source is Policy.Source when it was published; empty in generations published before it was
	// recorded.
	Source string `json:"source,omitempty"`
	// Superseded is when current moved to another generation: MinAge counts from it, since a reader
	// that resolved current just before the switch reads this generation from then on.
	Superseded time.Time `json:"superseded,omitzero"`
}

// Counters for tests: files linked, ExtraBytes walks, syncfs calls, generations the GC left to a
// reader, and Hold retries after the GC removed what current named.
var (
	linked      atomic.Int64
	extraWalks  atomic.Int64
	flushes     atomic.Int64
	heldSkips   atomic.Int64
	holdRetries atomic.Int64
)

// Entries calls fn with every entry of the manifest, in key order (a manifest Scan).
type Entries func(fn func(manifest.Entry) error) error

// Publish makes generation g the current one under root, after the manifest committed it and while
// DIR/<key> holds exactly its files: it builds g's tree from entries unless a complete tree is already
// there (with its object index, when p.Index asks for one), points current at it, removes the
// generations p does not keep and no reader holds, and returns what the volume keeps.
//
// An unchanged sync calls it again with the same g: that costs a few small files and no per-file
// work (ExtraBytes is cached for the same set of kept trees). Only one Publish runs at a time on a
// volume (an exclusive flock on the generations directory; a second one waits, as long as ctx lets
// it). When the old generations could not all be removed, err says why and the summary lists them
// as kept.
func Publish(ctx context.Context, root string, g int64, entries Entries, p Policy, now time.Time) (wire.GenerationSummary, error) {
	if g <= 0 {
		return wire.GenerationSummary{}, fmt.Errorf("publishing generation %d: generations start at 1", g)
	}
	if err := context.Cause(ctx); err != nil {
		return wire.GenerationSummary{}, fmt.Errorf("publishing generation %d: %w", g, err)
	}
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return wire.GenerationSummary{}, fmt.Errorf("creating %s: %w", Dir, err)
	}
	d, err := openDir(unix.AT_FDCWD, dir)
	if err != nil {
		return wire.GenerationSummary{}, err
	}
	defer closeDir(d) // also releases the writer lock
	if err := lockWriter(ctx, d, dir); err != nil {
		return wire.GenerationSummary{}, err
	}
	st, err := readState(d, dir)
	if err != nil {
		return wire.GenerationSummary{}, err
	}
	if err := st.removeLeftovers(); err != nil {
		return wire.GenerationSummary{}, err
	}

	wrote, err := st.ensureTree(ctx, root, g, entries, p, now)
	if err != nil {
		return wire.GenerationSummary{}, err
	}
	switched, err := st.makeCurrent(g, now)
	if err != nil {
		return wire.GenerationSummary{}, err
	}
	if (wrote || switched) && p.Durable {
		if err := syncFS(d, dir); err != nil {
			return wire.GenerationSummary{}, err
		}
	}

	kept, gcErr := st.collect(g, p, now)
	sum, err := st.summary(ctx, g, kept, p)
	if err != nil {
		return sum, err
	}
	return sum, gcErr
}

// ensureTree makes sure g has a complete tree (and its object index, when p.Index asks for one) and
// that every complete tree has a record, which the GC and the summary count on. It reports whether it
// wrote anything, so that Publish flushes only what changed.
func (st *state) ensureTree(ctx context.Context, root string, g int64, entries Entries, p Policy, now time.Time) (changed bool, err error) {
	if !st.trees[g] {
		m, err := st.build(ctx, root, g, entries, now, p)
		if err != nil {
			return false, fmt.Errorf("building generation %d: %w", g, err)
		}
		st.trees[g], st.metas[g] = true, m
		changed = true
	} else if p.Index && !st.indexed[g] {
		// A tree built before its volume was asked to serve peers.
		if err := writeIndex(ctx, st.d, g, entries); err != nil {
			return false, err
		}
		st.indexed[g], changed = true, true
	}
	for n := range st.trees {
		if _, ok := st.metas[n]; !ok {
			// The tree is whole (it was renamed into place) but its record is lost or torn (a
			// crash without Durable): count it again.
			m, err := st.recount(n)
			if err != nil {
				return false, err
			}
			st.metas[n] = m
		}
	}
	return changed, nil
}

// makeCurrent points current at g, unless it already does, and records when the generation it named
// before was superseded, since MinAge counts from then. It reports whether current moved.
func (st *state) makeCurrent(g int64, now time.Time) (switched bool, err error) {
	prev, err := readCurrent(st.d, st.dir)
	if err != nil {
		prev = 0 // not a link to a generation: the switch replaces it, or says why it cannot
	}
	if prev == g {
		return false, nil
	}
	if err := switchCurrent(st.d, g); err != nil {
		return false, err
	}
	if m, ok := st.metas[prev]; ok && st.trees[prev] {
		m.Superseded = now
		st.metas[prev] = m
		// Best effort: without it MinAge counts from the next generation's publication, which is
		// the same moment unless generations were published out of order.
		_ = writeMeta(st.d, m)
	}
	return true, nil
}

// state is what the generations directory holds, read once by Publish under the writer lock.
type state struct {
	d         int
	dir       string
	trees     map[int64]bool // complete trees, by generation
	indexed   map[int64]bool // trees with an object index
	metas     map[int64]meta // readable records
	leftovers []string       // names a crash left behind
}

func readState(d int, dir string) (*state, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	st := &state{d: d, dir: dir, trees: map[int64]bool{}, indexed: map[int64]bool{}, metas: map[int64]meta{}}
	var metaNames, indexNames []int64
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, buildingPrefix), strings.HasPrefix(name, deletingPrefix), strings.HasPrefix(name, tmpPrefix):
			st.leftovers = append(st.leftovers, name)
		case strings.HasSuffix(name, metaSuffix):
			if n, ok := parseGeneration(strings.TrimSuffix(name, metaSuffix)); ok {
				metaNames = append(metaNames, n)
			}
		case strings.HasSuffix(name, objectsSuffix):
			if n, ok := parseGeneration(strings.TrimSuffix(name, objectsSuffix)); ok {
				indexNames = append(indexNames, n)
			}
		default:
			if n, ok := parseGeneration(name); ok && de.IsDir() {
				st.trees[n] = true
			}
		}
	}
	for _, n := range metaNames {
		if !st.trees[n] {
			// The GC renames the tree away before it removes the record: a crash in between leaves it.
			st.leftovers = append(st.leftovers, strconv.FormatInt(n, 10)+metaSuffix)
			continue
		}
		if m, err := readMeta(d, n); err == nil {
			st.metas[n] = m
		}
	}
	for _, n := range indexNames {
		if !st.trees[n] {
			st.leftovers = append(st.leftovers, strconv.FormatInt(n, 10)+objectsSuffix)
			continue
		}
		st.indexed[n] = true
	}
	return st, nil
}

// removeLeftovers removes half-built and half-removed trees and temporary files of a crashed run.
// Nobody else writes here while the writer lock is held, and readers never open these names.
func (st *state) removeLeftovers() error {
	for _, name := range st.leftovers {
		if err := os.RemoveAll(filepath.Join(st.dir, name)); err != nil {
			return fmt.Errorf("removing leftover %s: %w", name, err)
		}
	}
	return nil
}

// collect removes the generations p does not keep, except those a reader holds, and returns the
// generations left besides cur.
func (st *state) collect(cur int64, p Policy, now time.Time) ([]int64, error) {
	var others []int64
	for n := range st.trees {
		if n != cur {
			others = append(others, n)
		}
	}
	keep := decide(cur, others, st.metas, p, now)
	var (
		kept []int64
		errs []error
	)
	for _, n := range others {
		if keep[n] {
			kept = append(kept, n)
			continue
		}
		removed, err := st.remove(n)
		if err != nil {
			errs = append(errs, err)
		}
		if !removed {
			heldSkips.Add(1)
			kept = append(kept, n)
		}
	}
	slices.Sort(kept)
	slices.Reverse(kept)
	return kept, errors.Join(errs...)
}

// decide is the policy, a pure function: which of the generations besides cur to keep. Generations
// older than cur are kept when among the Keep newest, when superseded less than MinAge ago (up to
// MaxKept, dropping the oldest first), or pinned; newer ones (left by a manifest that was recreated)
// only when pinned.
func decide(cur int64, others []int64, metas map[int64]meta, p Policy, now time.Time) map[int64]bool {
	maxKept := p.MaxKept
	if maxKept <= 0 {
		maxKept = DefaultMaxKept
	}
	keepN := min(max(p.Keep, 1), maxKept)
	pinned := map[int64]bool{}
	for _, n := range p.Pinned {
		pinned[n] = true
	}
	all := append([]int64{cur}, others...)
	slices.Sort(all)
	// supersededAt is when n stopped being current: its record's time, or else when the next
	// generation was published (which is when current moved on, unless that one was removed too).
	supersededAt := func(n int64) time.Time {
		if t := metas[n].Superseded; !t.IsZero() {
			return t
		}
		i, _ := slices.BinarySearch(all, n)
		if i+1 < len(all) {
			if t := metas[all[i+1]].Published; !t.IsZero() {
				return t
			}
		}
		return now // unknown: count it as just superseded, which errs on keeping it
	}

	keep := map[int64]bool{}
	count := 1 // cur
	var byAge []int64
	older := slices.DeleteFunc(slices.Clone(others), func(n int64) bool { return n > cur })
	slices.Sort(older)
	slices.Reverse(older)
	for i, n := range older {
		switch {
		case i < keepN-1:
			keep[n] = true
			count++
		case p.MinAge > 0 && now.Sub(supersededAt(n)) < p.MinAge:
			keep[n] = true
			count++
			byAge = append(byAge, n) // newest first
		}
	}
	for _, n := range others {
		if pinned[n] && !keep[n] {
			keep[n] = true
			count++
		}
	}
	for i := len(byAge) - 1; i >= 0 && count > maxKept; i-- {
		if n := byAge[i]; !pinned[n] {
			delete(keep, n)
			count--
		}
	}
	return keep
}

// remove deletes generation n unless a reader holds it (removed is false then). It locks the tree
// exclusively, without waiting, and renames it away while locked: a reader that opened it before
// waits for the lock, then sees the path gone and retries; one that opens it after fails at once.
func (st *state) remove(n int64) (removed bool, err error) {
	name := strconv.FormatInt(n, 10)
	fd, err := openDir(st.d, name)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing generation %d: %w", n, err)
	}
	if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		closeDir(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil // held by a reader
		}
		return false, fmt.Errorf("locking generation %d: %w", n, err)
	}
	gone := deletingPrefix + name + "-" + randomSuffix()
	if err := unix.Renameat(st.d, name, st.d, gone); err != nil {
		closeDir(fd)
		return false, fmt.Errorf("removing generation %d: %w", n, err)
	}
	closeDir(fd) // releases the lock: from here on the tree has no name a reader would open
	delete(st.trees, n)
	delete(st.metas, n)
	delete(st.indexed, n)
	for _, suffix := range []string{metaSuffix, objectsSuffix} {
		if err := unix.Unlinkat(st.d, name+suffix, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return true, fmt.Errorf("removing the record of generation %d: %w", n, err)
		}
	}
	// A failure here leaves a .deleting- directory that the next Publish removes.
	if err := os.RemoveAll(filepath.Join(st.dir, gone)); err != nil {
		return true, fmt.Errorf("removing generation %d: %w", n, err)
	}
	return true, nil
}

// summaryCache is summary.json: ExtraBytes for one set of kept trees. A tree is named by its number
// and the inode of its directory, so that a tree removed and built again never matches.
type summaryCache struct {
	Trees      []treeID `json:"trees"`
	ExtraBytes int64    `json:"extraBytes"`
}

type treeID struct {
	Generation int64  `json:"generation"`
	Inode      uint64 `json:"inode"`
}

// summary reports cur and the kept generations, newest first, with the ExtraBytes the older ones
// take: from summary.json when the kept trees are the ones it was computed for, else by walking them.
func (st *state) summary(ctx context.Context, cur int64, kept []int64, p Policy) (wire.GenerationSummary, error) {
	all := append([]int64{cur}, kept...)
	slices.Sort(all)
	slices.Reverse(all)
	pinned := map[int64]bool{}
	for _, n := range p.Pinned {
		pinned[n] = true
	}
	sum := wire.GenerationSummary{Current: cur}
	ids := make([]treeID, 0, len(all))
	for _, n := range all {
		m := st.metas[n]
		sum.Kept = append(sum.Kept, wire.GenerationInfo{
			Generation: n, Files: m.Files, Bytes: m.Bytes, Published: m.Published, Pinned: pinned[n],
		})
		var s unix.Stat_t
		if err := unix.Fstatat(st.d, strconv.FormatInt(n, 10), &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return sum, fmt.Errorf("reading generation %d: %w", n, err)
		}
		ids = append(ids, treeID{Generation: n, Inode: s.Ino})
	}
	if len(kept) == 0 {
		return sum, nil
	}
	var c summaryCache
	if b, err := readFileAt(st.d, summaryFile); err == nil && json.Unmarshal(b, &c) == nil && slices.Equal(c.Trees, ids) {
		sum.ExtraBytes = c.ExtraBytes
		return sum, nil
	}
	extra, err := extraBytes(ctx, st.d, cur, kept)
	if err != nil {
		return sum, err
	}
	sum.ExtraBytes = extra
	b, err := json.Marshal(summaryCache{Trees: ids, ExtraBytes: extra})
	if err != nil {
		return sum, err
	}
	// A cache: losing it costs one walk.
	_ = writeFileAt(st.d, summaryFile, b)
	return sum, nil
}

// lockWriter takes the exclusive writer lock on the generations directory, waiting as long as ctx
// allows (flock itself cannot be interrupted by a context).
func lockWriter(ctx context.Context, d int, dir string) error {
	for {
		err := flock(d, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("locking %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another publish in %s: %w", dir, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// switchCurrent points current at g atomically: a new symlink renamed over the old one.
func switchCurrent(d int, g int64) error {
	tmp := tmpPrefix + randomSuffix()
	if err := unix.Symlinkat(strconv.FormatInt(g, 10), d, tmp); err != nil {
		return fmt.Errorf("switching current to generation %d: %w", g, err)
	}
	if err := unix.Renameat(d, tmp, d, currentLink); err != nil {
		_ = unix.Unlinkat(d, tmp, 0) // the rename's error is the one to report
		return fmt.Errorf("switching current to generation %d: %w", g, err)
	}
	return nil
}

// readCurrent returns the generation current names; 0 when there is none.
func readCurrent(d int, dir string) (int64, error) {
	buf := make([]byte, 32)
	n, err := unix.Readlinkat(d, currentLink, buf)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s/%s: %w", dir, currentLink, err)
	}
	g, ok := parseGeneration(string(buf[:n]))
	if !ok {
		return 0, fmt.Errorf("reading %s/%s: %q is not a generation", dir, currentLink, buf[:n])
	}
	return g, nil
}

// SourceOf returns where generation g of the volume at root was copied from (Policy.Source), "" when
// it was not recorded.
func SourceOf(root string, g int64) (string, error) {
	d, err := unix.Open(filepath.Join(root, filepath.FromSlash(Dir)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: filepath.Join(root, filepath.FromSlash(Dir)), Err: err}
	}
	defer closeDir(d)
	m, err := readMeta(d, g)
	return m.Source, err
}

func readMeta(d int, n int64) (meta, error) {
	var m meta
	b, err := readFileAt(d, strconv.FormatInt(n, 10)+metaSuffix)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decoding generation %d: %w", n, err)
	}
	if m.Generation != n {
		return m, fmt.Errorf("decoding generation %d: the record is generation %d's", n, m.Generation)
	}
	return m, nil
}

func writeMeta(d int, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := writeFileAt(d, strconv.FormatInt(m.Generation, 10)+metaSuffix, b); err != nil {
		return fmt.Errorf("recording generation %d: %w", m.Generation, err)
	}
	return nil
}

func readFileAt(d int, name string) ([]byte, error) {
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer func() { _ = f.Close() }() // only read
	return io.ReadAll(f)
}

// writeFileAt replaces name atomically (a temporary file renamed over it). It does not fsync: what
// must survive a crash is flushed by the syncfs of a durable Publish, and a torn record is counted
// again.
func writeFileAt(d int, name string, b []byte) error {
	tmp := tmpPrefix + randomSuffix()
	fd, err := unix.Openat(d, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d, tmp, d, name)
	}
	if err != nil {
		_ = unix.Unlinkat(d, tmp, 0) // the write's error is the one to report
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// syncFS flushes the filesystem that holds the generations (syncfs(2)): links, renames and records
// alike, in one call instead of an fsync per directory.
func syncFS(d int, dir string) error {
	flushes.Add(1)
	if err := unix.Syncfs(d); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

// closeDir closes a directory descriptor. Its error is dropped on purpose: nothing is written through
// one (links, renames and records are made by name relative to it, and made durable by syncFS), and
// close(2) frees the descriptor, and so the flock it held, even when it reports an error.
func closeDir(fd int) { _ = unix.Close(fd) }

// openDir opens a directory relative to d (unix.AT_FDCWD for a path), not following a symlink.
func openDir(d int, name string) (int, error) {
	for {
		fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// parseGeneration parses a generation's directory name: a positive decimal number, written the way
// strconv.FormatInt writes it (so "007" is not generation 7).
func parseGeneration(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

func randomSuffix() string { return strconv.FormatUint(rand.Uint64(), 36) }

// Highest is the highest generation number the volume has used: of a tree, a record, or what current
// names. A manifest that begins again (lost, or removed by hand) must number its generations above
// it, or a reader or a BenchRun holding "generation 3" would find other contents under that name.
func Highest(root string) (int64, error) {
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	var top int64
	for _, de := range des {
		name := strings.TrimSuffix(de.Name(), metaSuffix)
		if n, ok := parseGeneration(name); ok && n > top {
			top = n
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, currentLink)); err == nil {
		if n, ok := parseGeneration(target); ok && n > top {
			top = n
		}
	}
	return top, nil
}

// Retire stops publishing generations on a volume that had them (a Dataset's keepGenerations set to
// 0): current goes, so that no reader keeps reading a generation that no longer moves, and so do the
// trees no reader holds, with the space only they kept. A held tree stays until its reader lets go and
// a later Retire runs. A volume without generations costs one failed directory read.
func Retire(ctx context.Context, root string) error {
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	d, err := openDir(unix.AT_FDCWD, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeDir(d) // also releases the writer lock
	if err := lockWriter(ctx, d, dir); err != nil {
		return err
	}
	st, err := readState(d, dir)
	if err != nil {
		return err
	}
	if err := st.removeLeftovers(); err != nil {
		return err
	}
	if err := unix.Unlinkat(d, currentLink, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing %s/%s: %w", Dir, currentLink, err)
	}
	var errs []error
	for n := range st.trees {
		if _, err := st.remove(n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
