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

package dataset

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// What starts a sync. They are recorded in status.lastSync.trigger.
const (
	TriggerInitial       = "Initial"
	TriggerManual        = "Manual"
	TriggerScheduled     = "Scheduled"
	TriggerSourceChanged = "SourceChanged"
	TriggerRetry         = "Retry"
	// TriggerRequested: a BenchRun with duringRefresh asked for a refresh (AnnotationRefreshRequested).
	TriggerRequested = "Requested"
	// TriggerSizing marks the listing Job that sizes a claim (recorded in lastSync when it fails).
	TriggerSizing = "Sizing"
)

// Retry backoff after failed syncs: 30 s doubling to at most an hour.
const (
	backoffBase = 30 * time.Second
	backoffMax  = time.Hour
)

// retryBackoff is the wait after the attempts-th consecutive failure.
func retryBackoff(attempts int32) time.Duration {
	if attempts < 1 {
		return 0
	}
	d := backoffBase
	for i := int32(1); i < attempts && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// minScheduleInterval is the shortest "@every" the controller accepts (the API refuses shorter ones
// too): each sync is a pod and a full listing, and a prefix listed every second is a bill, not a cache.
const minScheduleInterval = time.Minute

// parseSchedule parses spec.refresh.schedule: five cron fields or a descriptor (@hourly, @every 30m).
// An empty schedule is no schedule. A schedule that never fires (0 0 30 2 *: February has no 30th) is
// an error, not a sync due on every reconcile.
func parseSchedule(s string, now time.Time) (cron.Schedule, error) {
	if s == "" {
		return nil, nil
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, err
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < minScheduleInterval {
		return nil, fmt.Errorf("@every must be at least %s", minScheduleInterval)
	}
	if sched.Next(now).IsZero() {
		return nil, errors.New("the schedule never fires: no date matches it")
	}
	return sched, nil
}

// syncDecision says whether a sync is due now, and when to look again.
type syncDecision struct {
	// Trigger is why a sync is due now; empty when none is.
	Trigger string
	// NextScheduled is the next sync the schedule asks for, if there is a schedule.
	NextScheduled *time.Time
	// RequeueAfter is when the decision may change with time alone; zero when only a change to the
	// object can change it.
	RequeueAfter time.Duration
}

// decideSync is the refresh policy, a pure function of the Dataset, its parsed schedule, the time and
// the batch of event notifications waiting for it, if any. A manual token beats everything, then the
// first sync, a changed source, a retry after backoff (events wait out the backoff too: the sync that
// failed would fail for them as well), the schedule, and events.
//
// The schedule counts from the start of the last successful listing sync (listingBase), so schedules
// missed while the operator was down run once, not once per miss, and targeted syncs never postpone
// it: under a steady stream of notifications a change whose notification was lost still reaches the
// volume within one interval plus a sync.
func decideSync(ds *datav1alpha1.Dataset, sched cron.Schedule, hash string, now time.Time, events *EventBatch) syncDecision {
	var d syncDecision
	if ds.Spec.Refresh.Suspend {
		return d
	}
	st := &ds.Status
	last := st.LastSync
	wake := func(at time.Time) {
		if w := at.Sub(now); w > 0 && (d.RequeueAfter == 0 || w < d.RequeueAfter) {
			d.RequeueAfter = w
		}
	}
	scheduledDue := false
	if sched != nil {
		next := sched.Next(listingBase(ds))
		d.NextScheduled = &next
		if now.Before(next) {
			wake(next)
		} else {
			scheduledDue = true
		}
	}
	failed := last != nil && last.Result == datav1alpha1.SyncFailed
	retryAt := time.Time{}
	if failed && st.LastFailureTime != nil {
		retryAt = st.LastFailureTime.Add(retryBackoff(st.FailedAttempts))
	}
	switch {
	case ds.Spec.Refresh.Manual != "" && ds.Spec.Refresh.Manual != st.LastManualSync:
		d.Trigger = TriggerManual
	case last == nil && ptr.Deref(ds.Spec.Refresh.OnCreate, true):
		d.Trigger = TriggerInitial
	case last != nil && last.SourceHash != hash:
		// The source changed since the last attempt: try it now, whatever happened before.
		d.Trigger = TriggerSourceChanged
	case failed:
		if !now.Before(retryAt) {
			d.Trigger = TriggerRetry
		} else {
			wake(retryAt)
		}
	case RefreshRequested(ds):
		d.Trigger = TriggerRequested // a listing, as a scheduled sync
	case scheduledDue:
		d.Trigger = TriggerScheduled // a listing: it covers any pending events too
	case events != nil && (events.Overflow != "" || st.LastSuccessfulSyncTime == nil):
		// Too many changes, lost events, or nothing synced yet to apply changes to: list.
		d.Trigger = TriggerEventsOverflow
	case events != nil:
		d.Trigger = TriggerEvents
	}
	return d
}

// AnnotationRefreshRequested on a Dataset asks for one listing sync, like a new manual token, but
// set by the operator itself (a BenchRun with duringRefresh) rather than in the user's manifest: its
// value is the time of the request (RFC 3339), and it is served by the first sync that starts at or
// after it. An annotation the manifest does not name is left alone by Argo CD and Flux with their
// default settings (they compare and apply the fields the manifest sets), so GitOps does not fight
// it, and the spec, which GitOps owns, is never written.
const AnnotationRefreshRequested = "data.pqcache.dev/refresh-requested"

// RefreshRequested says whether the Dataset carries a refresh request that no sync has served: no sync
// started at or after the time the request names.
func RefreshRequested(ds *datav1alpha1.Dataset) bool {
	at, ok := requestTime(ds)
	if !ok {
		return false
	}
	last := ds.Status.LastSync
	return last == nil || last.StartTime == nil || last.StartTime.Time.Before(at)
}

// requestTime is the time of the Dataset's refresh request, if it has a readable one.
func requestTime(ds *datav1alpha1.Dataset) (time.Time, bool) {
	v, ok := ds.Annotations[AnnotationRefreshRequested]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	return at, err == nil
}

// isListing says whether a sync started by trigger lists the whole prefix: every sync but a targeted
// one, which applies the keys its notifications named.
func isListing(trigger string) bool { return trigger != TriggerEvents }

// listingBase is the time the schedule counts from: the start of the last successful listing sync.
// A status written before lastListingSyncTime existed falls back to its last sync if that one listed,
// and a Dataset never listed counts from its creation.
func listingBase(ds *datav1alpha1.Dataset) time.Time {
	st := &ds.Status
	switch last := st.LastSync; {
	case st.LastListingSyncTime != nil:
		return st.LastListingSyncTime.Time
	case last != nil && last.StartTime != nil && isListing(last.Trigger):
		return last.StartTime.Time
	}
	return ds.CreationTimestamp.Time
}
