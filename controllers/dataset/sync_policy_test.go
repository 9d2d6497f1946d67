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
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

func TestRetryBackoff(t *testing.T) {
	want := map[int32]time.Duration{0: 0, 1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 8: time.Hour, 50: time.Hour}
	for n, d := range want {
		if got := retryBackoff(n); got != d {
			t.Errorf("retryBackoff(%d) = %s, want %s", n, got, d)
		}
	}
}

func TestDecideSync(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	hourly, _ := cron.ParseStandard("@hourly")
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: created.Add(d)} }
	ds := func(mut func(*datav1alpha1.Dataset)) *datav1alpha1.Dataset {
		d := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}}}
		d.Spec.Refresh.OnCreate = ptr.To(true)
		if mut != nil {
			mut(d)
		}
		return d
	}
	synced := func(d *datav1alpha1.Dataset) {
		d.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, SourceHash: "h", StartTime: at(0), CompletionTime: at(time.Minute)}
		d.Status.LastSuccessfulSyncTime = at(time.Minute)
	}
	batch := &EventBatch{ID: "b1", Changes: []wire.Change{{Key: "t/a.parquet"}}}
	overflow := &EventBatch{ID: "b2", Overflow: "TooManyKeys"}
	failed := func(attempts int32, when time.Duration) func(*datav1alpha1.Dataset) {
		return func(d *datav1alpha1.Dataset) {
			d.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncFailed, SourceHash: "h", StartTime: at(when - time.Minute), CompletionTime: at(when)}
			d.Status.FailedAttempts = attempts
			d.Status.LastFailureTime = at(when)
		}
	}
	tests := []struct {
		name        string
		ds          *datav1alpha1.Dataset
		sched       cron.Schedule
		now         time.Duration
		events      *EventBatch
		wantTrigger string
		wantRequeue time.Duration
	}{
		{name: "first sync on create", ds: ds(nil), wantTrigger: TriggerInitial},
		{name: "onCreate false waits", ds: ds(func(d *datav1alpha1.Dataset) { d.Spec.Refresh.OnCreate = ptr.To(false) })},
		{name: "suspend holds even a manual token", ds: ds(func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Suspend = true; d.Spec.Refresh.Manual = "x" })},
		{name: "new manual token", ds: ds(func(d *datav1alpha1.Dataset) { synced(d); d.Spec.Refresh.Manual = "x" }), now: 2 * time.Minute, wantTrigger: TriggerManual},
		{name: "recorded manual token does nothing", ds: ds(func(d *datav1alpha1.Dataset) { synced(d); d.Spec.Refresh.Manual = "x"; d.Status.LastManualSync = "x" }), now: 2 * time.Minute},
		{name: "manual token skips the backoff", ds: ds(func(d *datav1alpha1.Dataset) { failed(5, time.Minute)(d); d.Spec.Refresh.Manual = "y" }), now: 2 * time.Minute, wantTrigger: TriggerManual},
		{name: "changed source", ds: ds(func(d *datav1alpha1.Dataset) { synced(d); d.Status.LastSync.SourceHash = "old" }), now: 2 * time.Minute, wantTrigger: TriggerSourceChanged},
		{name: "failure within backoff waits", ds: ds(failed(2, 10*time.Minute)), now: 10*time.Minute + 20*time.Second, wantRequeue: 40 * time.Second},
		{name: "failure after backoff retries", ds: ds(failed(2, 10*time.Minute)), now: 11 * time.Minute, wantTrigger: TriggerRetry},
		{name: "schedule not yet due", ds: ds(synced), sched: hourly, now: 30 * time.Minute, wantRequeue: 30 * time.Minute},
		{name: "schedule due", ds: ds(synced), sched: hourly, now: time.Hour, wantTrigger: TriggerScheduled},
		{name: "missed schedules run once", ds: ds(synced), sched: hourly, now: 5*time.Hour + 10*time.Minute, wantTrigger: TriggerScheduled},
		{name: "events start a targeted sync", ds: ds(synced), sched: hourly, now: 10 * time.Minute, events: batch, wantTrigger: TriggerEvents, wantRequeue: 50 * time.Minute},
		{name: "an overflow lists", ds: ds(synced), now: 10 * time.Minute, events: overflow, wantTrigger: TriggerEventsOverflow},
		{name: "events before any sync list", ds: ds(func(d *datav1alpha1.Dataset) { d.Spec.Refresh.OnCreate = ptr.To(false) }), events: batch, wantTrigger: TriggerEventsOverflow},
		{name: "a due schedule lists for the events too", ds: ds(synced), sched: hourly, now: time.Hour, events: batch, wantTrigger: TriggerScheduled},
		{name: "events wait out a failure's backoff", ds: ds(failed(2, 10*time.Minute)), now: 10*time.Minute + 20*time.Second, events: batch, wantRequeue: 40 * time.Second},
		{name: "suspend holds events", ds: ds(func(d *datav1alpha1.Dataset) { synced(d); d.Spec.Refresh.Suspend = true }), events: batch},
		{name: "a failure's backoff beats the schedule", ds: ds(failed(3, 59*time.Minute)), sched: hourly, now: 60*time.Minute + 30*time.Second, wantRequeue: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideSync(tt.ds, tt.sched, "h", created.Add(tt.now), tt.events)
			if d.Trigger != tt.wantTrigger || d.RequeueAfter != tt.wantRequeue {
				t.Errorf("decideSync = trigger %q requeue %s, want %q %s", d.Trigger, d.RequeueAfter, tt.wantTrigger, tt.wantRequeue)
			}
		})
	}
}

// A steady stream of notifications runs a targeted sync every 25 s. Each one is recorded as the Job
// would be, and none may push the next listing past one interval after the last listing.
func TestTargetedSyncsNeverPostponeTheListing(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return created.Add(d) }
	every, err := parseSchedule("@every 1m", created)
	if err != nil {
		t.Fatal(err)
	}
	for _, sched := range []struct {
		name string
		s    cron.Schedule
	}{{"@every 1m", every}, {"cron * * * * *", mustCron(t, "* * * * *")}} {
		t.Run(sched.name, func(t *testing.T) {
			ds := &datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}}}
			ds.Spec.Refresh.OnCreate = ptr.To(true)
			batch := &EventBatch{ID: "b", Changes: []wire.Change{{Key: "t/a.parquet"}}}
			runSync := func(trigger string, start time.Duration) {
				job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Annotations: map[string]string{AnnotationTrigger: trigger, AnnotationSourceHash: "h"}}}
				job.Status.StartTime = &metav1.Time{Time: at(start)}
				rep := &wire.SyncReport{Result: wire.ResultSucceeded, FilesCopied: 1}
				if ok, _ := recordSync(ds, job, jobs.State{Finished: true, At: at(start + 3*time.Second)}, workerOutcome{Report: rep}); !ok {
					t.Fatalf("%s sync at %s not recorded as a success", trigger, start)
				}
			}
			if d := decideSync(ds, sched.s, "h", at(0), nil); d.Trigger != TriggerInitial {
				t.Fatalf("first decision %q", d.Trigger)
			}
			runSync(TriggerInitial, 0)
			wantNext := sched.s.Next(at(0))
			listed := false
			for now := 25 * time.Second; now <= 3*time.Minute && !listed; now += 25 * time.Second {
				d := decideSync(ds, sched.s, "h", at(now), batch)
				if d.NextScheduled == nil || !d.NextScheduled.Equal(wantNext) {
					t.Fatalf("at %s the next listing is %v, want %s: a targeted sync moved it", now, d.NextScheduled, wantNext)
				}
				switch d.Trigger {
				case TriggerEvents:
					if !at(now).Before(wantNext) {
						t.Fatalf("at %s, past the listing due at %s, a targeted sync was chosen", now, wantNext)
					}
					runSync(TriggerEvents, now)
				case TriggerScheduled:
					runSync(TriggerScheduled, now)
					listed = true
					if got := ds.Status.LastListingSyncTime; got == nil || !got.Time.Equal(at(now)) {
						t.Fatalf("lastListingSyncTime %v after the listing at %s", got, now)
					}
				default:
					t.Fatalf("at %s: trigger %q", now, d.Trigger)
				}
			}
			if !listed {
				t.Fatalf("no listing sync in 3 minutes of targeted syncs every 25 s (next was %s)", wantNext)
			}
			if lt := ds.Status.LastTargetedSyncTime; lt == nil || !lt.Time.Before(ds.Status.LastListingSyncTime.Time) {
				t.Fatalf("lastTargetedSyncTime %v, lastListingSyncTime %v", lt, ds.Status.LastListingSyncTime)
			}
		})
	}
}

func mustCron(t *testing.T, s string) cron.Schedule {
	t.Helper()
	sched, err := cron.ParseStandard(s)
	if err != nil {
		t.Fatal(err)
	}
	return sched
}

// A listing sync's changes count as unannounced only beyond what the event source still holds, only
// for the listings that can tell, and twice in a row is a pattern.
func TestNoteUnannounced(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }
	listing := func(trigger string, start time.Duration, copied, deleted int64) *datav1alpha1.SyncResult {
		return &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, Trigger: trigger, StartTime: ts(start), FilesCopied: copied, FilesDeleted: deleted}
	}
	tests := []struct {
		name         string
		last         *datav1alpha1.SyncResult
		events       *datav1alpha1.EventStatus
		prevListing  *metav1.Time
		outstanding  int64
		wantFound    int64
		wantRepeated bool
		wantTotal    int64
	}{
		{name: "a scheduled listing that found two", last: listing(TriggerScheduled, time.Minute, 1, 1), prevListing: ts(0), wantFound: 2, wantTotal: 2},
		{name: "changes still pending are announced", last: listing(TriggerScheduled, time.Minute, 3, 0), outstanding: 2, wantFound: 1, wantTotal: 1},
		{name: "more pending than found", last: listing(TriggerScheduled, time.Minute, 1, 0), outstanding: 5},
		{name: "an initial listing tells nothing", last: listing(TriggerInitial, 0, 40, 0)},
		{name: "an overflow was announced", last: listing(TriggerEventsOverflow, time.Minute, 4, 0)},
		{name: "a targeted sync is not a listing", last: listing(TriggerEvents, time.Minute, 1, 0)},
		{name: "a failed listing counts nothing", last: &datav1alpha1.SyncResult{Result: datav1alpha1.SyncFailed, Trigger: TriggerScheduled, FilesCopied: 2}},
		{name: "the previous listing found some too", last: listing(TriggerScheduled, 2*time.Minute, 1, 0), prevListing: ts(time.Minute),
			events: &datav1alpha1.EventStatus{FoundByListing: 2, LastFoundByListingTime: ts(time.Minute)}, wantFound: 1, wantRepeated: true, wantTotal: 3},
		{name: "an earlier listing found some, the previous none", last: listing(TriggerManual, 3*time.Minute, 1, 0), prevListing: ts(2 * time.Minute),
			events: &datav1alpha1.EventStatus{FoundByListing: 2, LastFoundByListingTime: ts(time.Minute)}, wantFound: 1, wantTotal: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &datav1alpha1.DatasetStatus{LastSync: tt.last, Events: tt.events}
			found, repeated := noteUnannounced(st, tt.prevListing, tt.outstanding)
			if found != tt.wantFound || repeated != tt.wantRepeated {
				t.Fatalf("noteUnannounced = %d, %t; want %d, %t", found, repeated, tt.wantFound, tt.wantRepeated)
			}
			total := int64(0)
			if st.Events != nil {
				total = st.Events.FoundByListing
			}
			if total != tt.wantTotal {
				t.Fatalf("foundByListing %d, want %d", total, tt.wantTotal)
			}
			if found > 0 && !st.Events.LastFoundByListingTime.Equal(tt.last.StartTime) {
				t.Fatalf("lastFoundByListingTime %v, want %v", st.Events.LastFoundByListingTime, tt.last.StartTime)
			}
		})
	}
}
