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
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pqcache/pqcache/cache/manifest"
)

// Result of a sync.
const (
	ResultSucceeded = "Succeeded"
	ResultFailed    = "Failed"
)

// Reasons a failed sync reports; they match the Dataset condition reasons.
const (
	ReasonAccessDenied         = "AccessDenied"
	ReasonNoSuchBucket         = "NoSuchBucket"
	ReasonInvalidCredentials   = "InvalidCredentials"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonHostileKeys          = "HostileKeys"
	ReasonSyncFailed           = "SyncFailed"
	// The cache volume refused writes: read-only (EROFS), not writable by pqcache (EACCES, EPERM),
	// or failing (EIO). A full volume (ENOSPC, EDQUOT) is InsufficientCapacity.
	ReasonVolumeReadOnly         = "VolumeReadOnly"
	ReasonVolumePermissionDenied = "VolumePermissionDenied"
	ReasonVolumeIOError          = "VolumeIOError"
)

// Report is the machine-readable summary of a sync: `pqcache sync --json` prints it, and the operator
// turns it into Dataset status. Measurements are integers (bytes, milliseconds).
type Report struct {
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
	BytesCopied    int64     `json:"bytesCopied"`
	// BytesResumed are bytes of large files that an interrupted earlier run had fetched and verified,
	// and this one did not fetch again.
	BytesResumed   int64            `json:"bytesResumed,omitempty"`
	BytesPerSecond int64            `json:"bytesPerSecond"`
	Requests       RequestCounts    `json:"requests"`
	Manifest       manifest.Summary `json:"manifest"`
	Layout         Layout           `json:"layout"`
	// Failed lists the first files that could not be copied, with why.
	Failed []FileError `json:"failed,omitempty"`
	// Plan is filled by a dry run.
	Plan PlanSummary `json:"plan,omitzero"`
	// Space is set when the sync was refused for lack of room: what it needed and what the volume had.
	Space *Space `json:"space,omitempty"`
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

// Progress is a snapshot of a running sync.
type Progress struct {
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

type progressCounters struct {
	filesDone, filesTotal, bytesDone, bytesTotal atomic.Int64
	listed                                       atomic.Bool
}

func (p *progressCounters) snapshot(start time.Time) Progress {
	now := time.Now().UTC()
	pr := Progress{
		Listing: !p.listed.Load(), FilesDone: p.filesDone.Load(), FilesTotal: p.filesTotal.Load(),
		BytesDone: p.bytesDone.Load(), BytesTotal: p.bytesTotal.Load(), Time: now,
	}
	if ms := now.Sub(start).Milliseconds(); ms > 0 {
		pr.BytesPerSecond = pr.BytesDone * 1000 / ms
	}
	if pr.BytesPerSecond > 0 && !pr.Listing {
		pr.RemainingMillis = max(0, pr.BytesTotal-pr.BytesDone) * 1000 / pr.BytesPerSecond
	}
	return pr
}

// startProgress reports progress every interval until the returned stop is called.
func (s *syncer) startProgress(ctx context.Context) (stop func()) {
	if s.opts.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.opts.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.opts.Progress(s.progress.snapshot(s.rep.Start))
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TerminationMessageLimit is the size Kubernetes keeps of a container's termination message.
const TerminationMessageLimit = 4096

// Compact returns the report as single-line JSON of at most limit bytes, for a channel with a size
// limit such as a termination message: it drops listed failures, then layout advice, then shortens
// the message, and keeps every count.
func (r *Report) Compact(limit int) ([]byte, error) {
	c := *r
	c.Failed = append([]FileError(nil), r.Failed...)
	c.Layout.Advice = append([]string(nil), r.Layout.Advice...)
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
		case len(c.Message) > 64:
			c.Message = truncate(c.Message, len(c.Message)/2)
		default:
			return nil, fmt.Errorf("report does not fit in %d bytes even without details (%d bytes)", limit, len(data))
		}
	}
}
