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

type progressCounters struct {
	filesDone, filesTotal, bytesDone, bytesTotal atomic.Int64
	listed                                       atomic.Bool
}

func (p *progressCounters) snapshot(start time.Time) wire.SyncProgress {
	now := time.Now().UTC()
	pr := wire.SyncProgress{
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
				if err := recovered("reporting progress", func() error {
					s.opts.Progress(s.progress.snapshot(s.rep.Start))
					return nil
				}); err != nil {
					s.abort(err)
					return
				}
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
