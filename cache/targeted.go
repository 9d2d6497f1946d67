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

// A targeted sync applies the keys S3 event notifications named (Options.Changes) without listing the
// prefix. Events are hints: they arrive late, twice and out of order, and some stores send no size or
// ETag. So the sync trusts none of them: it asks the bucket for each key's current state (one HEAD),
// compares that with the manifest, and copies or deletes through the same verify-and-publish path as
// a listing sync, the copy conditional on the ETag the HEAD saw. What gets published is therefore
// always what the bucket held when the sync looked, never an older version than a previous sync
// published (each sync looks later than the last), whatever order the events came in.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// targetedChange is one change in scope, with what the bucket said about its key.
type targetedChange struct {
	change wire.Change
	rel    string // key relative to the prefix
	obj    plan.Object
	exists bool
	err    error
}

// planChanges is the planner of a targeted sync: it checks every change against the bucket and the
// manifest and emits the copies and deletes that make the volume match the bucket for those keys.
// It fills s.rep.Changes as far as decisions go; settleChanges finishes it once publishing is done.
func (s *syncer) planChanges(ctx context.Context, filter *plan.Filter, emit func(plan.Action) error) error {
	out := &wire.ChangeOutcome{}
	s.rep.Changes = out
	s.mu.Lock()
	s.applied, s.failedKeys = map[string]time.Time{}, map[string]bool{}
	s.mu.Unlock()
	changes := s.changesInScope(filter, out)
	s.describe(ctx, changes)
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	for _, tc := range changes {
		s.rep.FilesListed++
		if tc.err != nil {
			s.fail(tc.rel, s3store.Classify(tc.err), tc.err)
			continue
		}
		a, settled, err := s.planChange(tc, out)
		if err != nil {
			return err
		}
		if !settled {
			continue
		}
		s.applied[tc.rel] = tc.change.EventTime
		if a == nil {
			continue
		}
		if err := emit(*a); err != nil {
			return err
		}
	}
	return nil
}

// changesInScope are the change set's keys this sync may publish, one change per key, sorted; the
// others are counted as ignored.
func (s *syncer) changesInScope(filter *plan.Filter, out *wire.ChangeOutcome) []*targetedChange {
	byKey := map[string]*targetedChange{}
	for _, c := range s.opts.Changes.Changes {
		rel, ok := strings.CutPrefix(c.Key, s.opts.Prefix)
		if !ok || rel == "" || strings.HasSuffix(rel, "/") || !filter.Match(rel) {
			out.Ignored++
			continue
		}
		if err := plan.ValidateKey(rel); err != nil {
			// A key no sync can publish: the listing sync reports it (HostileKeys); failing here
			// would hand the batch back forever, holding every other change of it.
			out.Ignored++
			s.log.Warn("Ignoring a changed key that cannot be published", "key", rel, "error", err)
			continue
		}
		// The operator sends one change per key; should a set hold two, the later one stands (the
		// bucket decides anyway).
		byKey[rel] = &targetedChange{change: c, rel: rel}
	}
	changes := make([]*targetedChange, 0, len(byKey))
	for _, tc := range byKey {
		changes = append(changes, tc)
	}
	slices.SortFunc(changes, func(a, b *targetedChange) int { return strings.Compare(a.rel, b.rel) })
	return changes
}

// planChange compares one described change with what is published: the copy or delete it needs, if
// any. settled is false for a change ignored because its path is also another object's.
func (s *syncer) planChange(tc *targetedChange, out *wire.ChangeOutcome) (a *plan.Action, settled bool, err error) {
	old, have, err := s.m.Get(tc.rel)
	if err != nil {
		return nil, false, err
	}
	stale := s.staleEvent(tc)
	if tc.exists && !have {
		if dir, err := s.pathConflict(tc.rel); err != nil {
			return nil, false, err
		} else if dir != "" {
			// "a/b" while "a" is a published file, or the reverse: a path cannot be both. The listing
			// sync reports it (HostileKeys); failing here would hold the batch forever.
			out.Ignored++
			s.log.Warn("Ignoring a changed key whose path is also another object's", "key", tc.rel, "other", dir)
			return nil, false, nil
		}
	}
	switch {
	case !tc.exists && have && s.opts.Prune:
		a = &plan.Action{Old: &old}
	case !tc.exists:
		// Nothing on the volume to remove (or deletes are off): already as the bucket has it.
	case !have:
		a = &plan.Action{Copy: true, Object: tc.obj, Why: plan.ChangeNew}
	case tc.obj.LastModified.Before(old.LastModified.Add(-time.Second)):
		// The bucket answered with a version older than the one published (a store whose replicas
		// lag): keep the newer one; the next listing sync settles it.
		s.rep.FilesUnchanged++
		stale = true
		s.log.Info("The bucket answered with an older version than the published one; keeping it", "key", tc.rel,
			"published", old.LastModified, "answered", tc.obj.LastModified)
	default:
		if why := plan.Compare(tc.obj, old); why != "" {
			a = &plan.Action{Copy: true, Object: tc.obj, Old: &old, Why: why}
		} else {
			s.rep.FilesUnchanged++
		}
	}
	if stale {
		out.Stale++
	}
	return a, true, nil
}

// describe asks the bucket for each change's key, with up to Parallelism HEADs in flight.
func (s *syncer) describe(ctx context.Context, changes []*targetedChange) {
	next := make(chan *targetedChange)
	var wg sync.WaitGroup
	for range min(s.opts.Parallelism, max(1, len(changes))) {
		wg.Go(func() {
			for tc := range next {
				tc.err = recovered("describing "+tc.rel, func() (err error) {
					tc.obj, tc.exists, err = s.store.Describe(ctx, s.prefix+tc.rel, s.prefix)
					if err == nil {
						s.answered.Store(true)
					}
					return err
				})
				if errors.Is(tc.err, s3store.ErrPanicked) {
					s.abort(tc.err)
				}
			}
		})
	}
	for _, tc := range changes {
		select {
		case next <- tc:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
}

// staleEvent says whether the bucket no longer holds what the event announced: a removed object that
// came back, a created one that is gone, or one rewritten since (another ETag). The sync publishes
// the bucket's state either way; the count tells how often events lag behind.
func (s *syncer) staleEvent(tc *targetedChange) bool {
	c := tc.change
	switch {
	case c.Removed:
		return tc.exists
	case !tc.exists:
		return true
	default:
		return c.ETag != "" && c.ETag != tc.obj.ETag
	}
}

// settleChanges finishes a targeted sync's outcome once everything is published: keys whose copy or
// delete failed are not applied; the others are, as of now.
func (s *syncer) settleChanges() {
	out := s.rep.Changes
	if out == nil {
		return
	}
	out.PublishedAt = time.Now().UTC()
	for key, at := range s.applied {
		if s.failedKeys[key] {
			continue
		}
		out.Applied++
		if !at.IsZero() && (out.OldestEventTime.IsZero() || at.Before(out.OldestEventTime)) {
			out.OldestEventTime = at.UTC()
		}
	}
}

// pathConflict returns a published key that makes rel impossible to publish: a file where rel needs a
// directory (one of its parents), or files under rel where rel would be a file. "" when there is none.
func (s *syncer) pathConflict(rel string) (string, error) {
	for i := range len(rel) {
		if rel[i] != '/' {
			continue
		}
		if _, ok, err := s.m.Get(rel[:i]); err != nil || ok {
			return rel[:i], err
		}
	}
	e, ok, err := s.m.Iterate(rel + "/").Next()
	if err != nil || !ok {
		return "", err
	}
	return e.Key, nil
}
