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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/cache/table/delta"
)

// ErrTableCorrupt and ErrTableUnsupported end a sync of a table whose newest version cannot be
// copied exactly (wire.ReasonTableCorrupt, wire.ReasonTableUnsupported); nothing is published.
var (
	ErrTableCorrupt     = errors.New("the table's log does not read as a committed snapshot")
	ErrTableUnsupported = errors.New("the table needs what pqcache does not read")
)

// checkTable refuses table arguments a sync cannot copy exactly: an unknown format, a root that is
// not a folder, and include or exclude globs (a part of a version is no version).
func checkTable(a wire.SyncArgs, prefix string) error {
	switch {
	case a.Table == "":
		return nil
	case a.Table != wire.TableDelta:
		return fmt.Errorf("--table %q: the formats read are %s", a.Table, wire.TableDelta)
	case prefix != "" && !strings.HasSuffix(prefix, "/"):
		return fmt.Errorf("--table: the prefix %q is the table's root folder, and ends with '/'", prefix)
	case len(a.Include) > 0 || len(a.Exclude) > 0:
		return errors.New("--table copies one whole version of the table: --include and --exclude would make it a version nobody committed")
	}
	return nil
}

// tableFiles is the file set of one committed version of a table: what a listing sync of its root
// copies, and nothing else (files of other versions, a writer's uncommitted or failed files,
// _last_checkpoint). A file the version names that the listing does not show fails the sync.
type tableFiles struct {
	snapshot delta.Snapshot
	// sizes are the wanted keys (relative to the prefix) with the size the log gives them; -1 when
	// it gives none (deletion vectors, log files: the listing's size is taken).
	sizes map[string]int64
	// seen are the wanted keys the listing showed.
	seen map[string]bool
}

// readTable lists the table's log and reads its newest committed version: log files the copy
// already holds, with the listed ETag, are read from the volume, so an unchanged table costs its
// log's listing and no GET.
func (s *syncer) readTable(ctx context.Context) (*tableFiles, error) {
	listed := map[string]plan.Object{}
	var log []delta.LogObject
	err := s.store.ListPages(ctx, s.prefix+delta.LogDir, s.prefix, func(page s3store.Page) error {
		for _, obj := range page.Objects {
			listed[obj.Key] = obj
			log = append(log, delta.LogObject{Key: obj.Key, Size: obj.Size})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the table's log: %w", err)
	}
	fetch := func(ctx context.Context, key string) (io.ReadCloser, error) {
		return s.openLogFile(ctx, key, listed[key])
	}
	snap, err := delta.Latest(ctx, log, fetch, delta.Limits{TempDir: filepath.Join(s.root, manifest.StagingDir)})
	switch {
	case errors.Is(err, delta.ErrUnsupported):
		return nil, fmt.Errorf("%w: %w", ErrTableUnsupported, err)
	case errors.Is(err, delta.ErrNotATable), errors.Is(err, delta.ErrCorruptLog), errors.Is(err, delta.ErrTooLarge), errors.Is(err, delta.ErrNoSuchVersion):
		return nil, fmt.Errorf("%w: %w", ErrTableCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("reading the table's log: %w", err)
	}
	t := &tableFiles{snapshot: snap, sizes: map[string]int64{}, seen: map[string]bool{}}
	for _, k := range snap.LogKeys {
		t.sizes[k] = -1
	}
	for _, f := range snap.Files {
		t.sizes[f.Key] = f.Size
	}
	for _, k := range snap.DeletionVectorFiles {
		t.sizes[k] = -1
	}
	s.log.Info("Read the table's newest version", "version", snap.Version, "files", len(snap.Files), "logFiles", len(snap.LogKeys))
	return t, nil
}

// openLogFile opens a log file: the volume's copy when the manifest holds it with the listed ETag
// and size (log files are written once; a copy checked when it was synced is the object), else a
// GET of the listed version.
func (s *syncer) openLogFile(ctx context.Context, key string, obj plan.Object) (io.ReadCloser, error) {
	if s.m == nil { // a dry run on a new directory
		body, _, err := s.store.Get(ctx, s.prefix+key, obj.ETag, s3store.Whole)
		return body, err
	}
	if e, ok, err := s.m.Get(key); err == nil && ok && e.ETag == obj.ETag && e.Size == obj.Size {
		if f, err := os.Open(filepath.Join(s.root, filepath.FromSlash(key))); err == nil {
			return f, nil
		}
	}
	body, _, err := s.store.Get(ctx, s.prefix+key, obj.ETag, s3store.Whole)
	return body, err
}

// wants tells whether the version needs the listed object, and notes it seen; an object whose
// listed size differs from the log's is refused, and the sync fails.
func (t *tableFiles) wants(s *syncer, obj plan.Object) bool {
	size, ok := t.sizes[obj.Key]
	if !ok {
		return false
	}
	t.seen[obj.Key] = true // listed: a wrong size fails the file, not the listing
	if size >= 0 && size != obj.Size {
		s.fail(obj.Key, wire.ReasonTableCorrupt, fmt.Errorf("%w: version %d names %s with %d bytes, and the bucket holds %d",
			ErrTableCorrupt, t.snapshot.Version, obj.Key, size, obj.Size))
		return false
	}
	return true
}

// complete returns why the listing did not show every file the version needs, or nil.
func (t *tableFiles) complete() error {
	var missing []string
	for k := range t.sizes {
		if !t.seen[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("%w: version %d names %d files the bucket does not hold (%s first): a commit of a file not written, or files removed before the commits that use them expired",
		ErrTableCorrupt, t.snapshot.Version, len(missing), missing[0])
}

// report is the report's account of the version copied.
func (t *tableFiles) report() *wire.TableSnapshot {
	return &wire.TableSnapshot{Format: wire.TableDelta, Version: t.snapshot.Version,
		Files: int64(len(t.snapshot.Files) + len(t.snapshot.DeletionVectorFiles)), LogFiles: int64(len(t.snapshot.LogKeys))}
}
