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
	"sync/atomic"
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// Result of a sync.
const (
	ResultSucceeded = wire.ResultSucceeded
	ResultFailed    = wire.ResultFailed
)

// Reasons a failed sync reports; they match the Dataset condition reasons.
const (
	ReasonAccessDenied         = wire.ReasonAccessDenied
	ReasonNoSuchBucket         = wire.ReasonNoSuchBucket
	ReasonInvalidCredentials   = wire.ReasonInvalidCredentials
	ReasonInsufficientCapacity = wire.ReasonInsufficientCapacity
	ReasonHostileKeys          = wire.ReasonHostileKeys
	ReasonSyncFailed           = wire.ReasonSyncFailed
	// The cache volume refused writes (by errno); a full volume is InsufficientCapacity.
	ReasonVolumeReadOnly         = wire.ReasonVolumeReadOnly
	ReasonVolumePermissionDenied = wire.ReasonVolumePermissionDenied
	ReasonVolumeIOError          = wire.ReasonVolumeIOError
)

// The report types are the worker's wire contract with the operator (package wire); these names keep
// the engine's code readable.
type (
	Report        = wire.SyncReport
	Space         = wire.Space
	RequestCounts = wire.RequestCounts
	Layout        = wire.Layout
	FileError     = wire.FileError
	PlanSummary   = wire.PlanSummary
	Progress      = wire.SyncProgress
)

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
const TerminationMessageLimit = wire.TerminationMessageLimit
