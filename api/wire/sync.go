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

package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// Result of a sync.
const (
	ResultSucceeded = "Succeeded"
	ResultFailed    = "Failed"
)

// SyncReport is the machine-readable summary of a sync: `pqcache sync --json` prints it, a worker
// writes it (Compact) as its termination message, and the operator turns it into Dataset status.
// Measurements are integers (bytes, milliseconds).
type SyncReport struct {
	Result         string    `json:"result"`
	Reason         string    `json:"reason,omitempty"`
	Message        string    `json:"message,omitempty"`
	Source         string    `json:"source"`
	DryRun         bool      `json:"dryRun,omitempty"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	DurationMillis int64     `json:"durationMillis"`
	FilesListed    int64     `json:"filesListed"`
	FilesCopied    int64     `json:"filesCopied"`
	FilesDeleted   int64     `json:"filesDeleted"`
	FilesUnchanged int64     `json:"filesUnchanged"`
	FilesFailed    int64     `json:"filesFailed"`
	Replanned      int64     `json:"replanned,omitempty"`
	// FilesFromFallback are files the source (a peer) could not serve, or served bytes that failed
	// verification, which were copied from the fallback (the bucket) instead.
	FilesFromFallback int64 `json:"filesFromFallback,omitempty"`
	// FilesUnverified are files copied with a weaker check than the store vouches for: multipart
	// objects of a store that ignores part reads (GET ?partNumber=N answered with the whole object),
	// checked by their size alone, as Warnings says.
	FilesUnverified int64 `json:"filesUnverified,omitempty"`
	// Warnings say what the sync did that the user should know and may act on (at most a few).
	Warnings    []string `json:"warnings,omitempty"`
	BytesCopied int64    `json:"bytesCopied"`
	// BytesResumed are bytes of large files that an interrupted earlier run had fetched and verified,
	// and this one did not fetch again.
	BytesResumed   int64           `json:"bytesResumed,omitempty"`
	BytesPerSecond int64           `json:"bytesPerSecond"`
	Requests       RequestCounts   `json:"requests"`
	Manifest       ManifestSummary `json:"manifest"`
	Layout         Layout          `json:"layout"`
	// Failed lists the first files that could not be copied, with why.
	Failed []FileError `json:"failed,omitempty"`
	// Plan is filled by a dry run.
	Plan PlanSummary `json:"plan,omitzero"`
	// Space is set when the sync was refused for lack of room: what it needed and what the volume had.
	Space *Space `json:"space,omitempty"`
	// Changes is set by a targeted sync (a ChangeSet from event notifications): what it did with them.
	Changes *ChangeOutcome `json:"changes,omitempty"`
	// Generations says which complete generations the volume keeps for consistent readers.
	Generations *GenerationSummary `json:"generations,omitempty"`
	// Table is set for a table source: the committed version the sync copied.
	Table *TableSnapshot `json:"table,omitempty"`
}

// TableSnapshot is the committed version of a table that a sync copied exactly.
type TableSnapshot struct {
	// Format is the table format ("delta").
	Format string `json:"format"`
	// Version is the table's version (Delta: its log's commit number).
	Version int64 `json:"version"`
	// Files are the data files the version reads (deletion vectors included), LogFiles the log and
	// metadata files a reader of it opens.
	Files    int64 `json:"files"`
	LogFiles int64 `json:"logFiles"`
}

// ManifestSummary describes a committed manifest: its totals, its generation (one more with every
// commit that changed something) and the digest of its entries.
type ManifestSummary struct {
	Files      int64  `json:"files"`
	Bytes      int64  `json:"bytes"`
	Generation int64  `json:"generation"`
	Digest     string `json:"digest"`
}

// Space is the room a refused sync needed.
type Space struct {
	NeedBytes  int64 `json:"needBytes"`
	FreeBytes  int64 `json:"freeBytes"`
	TotalBytes int64 `json:"totalBytes"`
}

// RequestCounts are the HTTP requests a sync sent, retries included.
type RequestCounts struct {
	List int64 `json:"list"`
	Get  int64 `json:"get"`
	Head int64 `json:"head"`
}

// Layout summarises the Parquet row groups of the cache.
type Layout struct {
	ParquetFiles    int64    `json:"parquetFiles"`
	RowGroups       int64    `json:"rowGroups"`
	MinRowsPerGroup int64    `json:"minRowsPerGroup"`
	MaxRowsPerGroup int64    `json:"maxRowsPerGroup"`
	Advice          []string `json:"advice,omitempty"`
}

// FileError is one file that could not be copied.
type FileError struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

// PlanSummary is what a dry run would do.
type PlanSummary struct {
	Copies    int64 `json:"copies"`
	CopyBytes int64 `json:"copyBytes"`
	Deletes   int64 `json:"deletes"`
}

// SyncProgress is a snapshot of a running sync, published in the progress annotation.
type SyncProgress struct {
	// Listing is true until the whole prefix has been listed; totals grow until then.
	Listing         bool      `json:"listing"`
	FilesDone       int64     `json:"filesDone"`
	FilesTotal      int64     `json:"filesTotal"`
	BytesDone       int64     `json:"bytesDone"`
	BytesTotal      int64     `json:"bytesTotal"`
	BytesPerSecond  int64     `json:"bytesPerSecond"`
	RemainingMillis int64     `json:"remainingMillis,omitempty"`
	Time            time.Time `json:"time"`
}

// Compact returns the report as single-line JSON of at most limit bytes, for a channel with a size
// limit such as a termination message: it drops listed failures, then layout advice, then shortens
// the message, and keeps every count.
func (r *SyncReport) Compact(limit int) ([]byte, error) {
	c := *r
	c.Failed = append([]FileError(nil), r.Failed...)
	c.Layout.Advice = append([]string(nil), r.Layout.Advice...)
	if r.Generations != nil {
		g := *r.Generations
		g.Kept = append([]GenerationInfo(nil), g.Kept...)
		c.Generations = &g
	}
	for {
		data, err := json.Marshal(&c)
		if err != nil || len(data) <= limit {
			return data, err
		}
		switch {
		case len(c.Failed) > 0:
			c.Failed = c.Failed[:len(c.Failed)-1]
		case len(c.Layout.Advice) > 0:
			c.Layout.Advice = c.Layout.Advice[:len(c.Layout.Advice)-1]
		case c.Generations != nil && len(c.Generations.Kept) > 1:
			// The oldest kept generation that no reader pinned goes first: the operator needs the
			// current one and the pinned ones to tell a run which tree it reads.
			kept := c.Generations.Kept
			drop := -1
			for i := len(kept) - 1; i >= 0 && drop < 0; i-- {
				if !kept[i].Pinned && kept[i].Generation != c.Generations.Current {
					drop = i
				}
			}
			for i := len(kept) - 1; i >= 0 && drop < 0; i-- {
				if kept[i].Generation != c.Generations.Current {
					drop = i
				}
			}
			if drop < 0 {
				return nil, fmt.Errorf("report does not fit in %d bytes even without details (%d bytes)", limit, len(data))
			}
			c.Generations.Kept = append(kept[:drop:drop], kept[drop+1:]...)
		case len(c.Message) > 64:
			c.Message = Truncate(c.Message, len(c.Message)/2)
		default:
			return nil, fmt.Errorf("report does not fit in %d bytes even without details (%d bytes)", limit, len(data))
		}
	}
}

// DecodeSyncReport reads a report a worker wrote.
func DecodeSyncReport(s string) (*SyncReport, error) {
	var r SyncReport
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decoding the sync report: %w", err)
	}
	return &r, nil
}
