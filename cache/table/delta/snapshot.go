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

package delta

import (
	"context"
	"fmt"
	"io"
)

// LogObject is one object listed under <table>/_delta_log/, its key relative to the table root
// (e.g. "_delta_log/00000000000000000012.json"). Size is the listed size, checked against Limits
// before anything is fetched.
type LogObject struct {
	Key  string
	Size int64
}

// Fetch opens a log object (key relative to the table root) for reading. The caller's store does
// the GET, so this package needs no credentials or client of its own.
type Fetch func(ctx context.Context, key string) (io.ReadCloser, error)

// File is a data file of a snapshot: its key relative to the table root (add.path URI-decoded,
// i.e. the object's name) and add.size.
type File struct {
	Key  string
	Size int64
}

// Snapshot is one committed version of a table as a file set: copying LogKeys, Files and
// DeletionVectorFiles, and nothing else, gives a table that readers open at Version.
type Snapshot struct {
	Version int64
	// LogKeys are the _delta_log keys a reader of Version needs, sorted: the newest complete
	// checkpoint at or below Version and every JSON commit after it up to Version. Never
	// _last_checkpoint (it may point past Version; readers list the log when it is absent).
	LogKeys []string
	// Files are the live data files, sorted by key.
	Files []File
	// DeletionVectorFiles are the files holding the live files' deletion vectors, sorted. The log
	// does not record their sizes; take them from the listing.
	DeletionVectorFiles []string
	// Protocol is the protocol in force at Version.
	Protocol Protocol
	// MetadataID is the table's id (metaData.id); a new id at the same root is a new table.
	MetadataID string
	// PartitionColumns are the table's partition columns at Version.
	PartitionColumns []string
}

// Latest reads the snapshot at the newest version the listing shows whose log is complete (every
// commit from the checkpoint used, or from version 0, up to it is listed). A commit a writer is
// still uploading, or one an eventually consistent listing misses, thus yields the version before.
func Latest(ctx context.Context, log []LogObject, fetch Fetch, limits Limits) (Snapshot, error) {
	lim := limits.withDefaults()
	ix, err := indexLog(log)
	if err != nil {
		return Snapshot{}, err
	}
	v, ok := ix.latest()
	if !ok {
		return Snapshot{}, ix.noVersion()
	}
	return ix.read(ctx, v, fetch, lim)
}

// At reads the snapshot at version v (time travel, and tests against other readers).
func At(ctx context.Context, log []LogObject, v int64, fetch Fetch, limits Limits) (Snapshot, error) {
	lim := limits.withDefaults()
	ix, err := indexLog(log)
	if err != nil {
		return Snapshot{}, err
	}
	if ix.empty() {
		return Snapshot{}, fmt.Errorf("%w: no commit or checkpoint under %s", ErrNotATable, LogDir)
	}
	if v < 0 {
		return Snapshot{}, fmt.Errorf("%w: version %d", ErrNoSuchVersion, v)
	}
	return ix.read(ctx, v, fetch, lim)
}

// noVersion explains why no version of the listing is complete.
func (ix *logIndex) noVersion() error {
	switch {
	case ix.empty():
		return fmt.Errorf("%w: no commit or checkpoint under %s", ErrNotATable, LogDir)
	case len(ix.v2) > 0:
		return fmt.Errorf("%w: the log needs a v2 (UUID-named) checkpoint", ErrUnsupported)
	}
	return fmt.Errorf("%w: no version has a complete log (commit 0 or a complete checkpoint before a run of commits)", ErrCorruptLog)
}

// read replays version v: the checkpoint's parts, then each commit in order.
func (ix *logIndex) read(ctx context.Context, v int64, fetch Fetch, lim Limits) (Snapshot, error) {
	p, err := ix.planAt(v, lim)
	if err != nil {
		return Snapshot{}, err
	}
	s := newState(lim)
	for _, part := range p.checkpoint {
		s.current = part.Key
		if err := readCheckpointPart(ctx, part, fetch, lim, s.apply); err != nil {
			return Snapshot{}, err
		}
	}
	for _, c := range p.commits {
		s.current = c.Key
		if err := replayCommit(ctx, c, fetch, lim, s.apply); err != nil {
			return Snapshot{}, err
		}
	}
	return s.snapshot(v, p.keys())
}

// replayCommit fetches one JSON commit and applies its actions.
func replayCommit(ctx context.Context, c LogObject, fetch Fetch, lim Limits, apply func(action) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Size > lim.MaxCommitBytes {
		return fmt.Errorf("%s: %w", c.Key, tooLarge("the commit", "MaxCommitBytes", lim.MaxCommitBytes))
	}
	rc, err := fetch(ctx, c.Key)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", c.Key, err)
	}
	defer func() { _ = rc.Close() }()
	return readCommit(ctx, rc, c.Key, lim, apply)
}
