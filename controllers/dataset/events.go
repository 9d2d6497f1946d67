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
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/source"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// EventBatch is a batch of changed keys for one Dataset from its event source (S3 event
// notifications): the keys to check and sync in one targeted sync, or an overflow that asks for a
// listing sync instead.
type EventBatch struct {
	// ID identifies the batch to the hub; the sync Job carries it, so the batch is settled when the
	// Job is recorded.
	ID string
	// Changes are the changed keys (full S3 keys), one per key.
	Changes []wire.Change
	// Overflow, when set, says why a listing sync must run instead (too many keys, events lost).
	Overflow string
	// Fresh is true when a change lies under one of the Dataset's fresh prefixes: it goes first.
	Fresh bool
}

// EventProblem is what is wrong with a Dataset's event source, for its EventSource condition.
type EventProblem struct {
	Reason, Message string
}

// EventHub is the manager's side of S3 event notifications: it runs each Dataset's source (an SQS
// queue it polls, or its webhook endpoint), gathers changes into batches and holds them until the
// Dataset controller has synced them. It lives outside this package (controllers/eventhub, over
// cache/notify): the controllers need no SQS client. Nil means no event sources.
type EventHub interface {
	// Watch starts, or reconfigures, the event source of a Dataset with spec.refresh.events.
	Watch(ctx context.Context, ds *datav1alpha1.Dataset) error
	// Forget stops a Dataset's source and drops its batches (the Dataset is gone, or has no events).
	Forget(key types.NamespacedName)
	// Pending is the batch waiting for the Dataset, if any. It stays pending until Done.
	Pending(key types.NamespacedName) *EventBatch
	// Done settles a batch: applied, with the worker's outcome (for a targeted sync), or not applied,
	// to be delivered again. It returns the lag from the batch's newest event to its publication.
	Done(key types.NamespacedName, id string, applied bool, outcome *wire.ChangeOutcome) (lag time.Duration, ok bool)
	// Status is the source's counters, and what is wrong with it, if anything.
	Status(key types.NamespacedName) (datav1alpha1.EventStatus, *EventProblem)
	// Source wakes the Dataset controller when a Dataset has a batch, or news about its source.
	Source() source.Source
}

// Triggers of syncs that events start.
const (
	// TriggerEvents is a targeted sync of the keys a batch of event notifications named.
	TriggerEvents = "Events"
	// TriggerEventsOverflow is a listing sync that a batch too large, or lost events, asked for.
	TriggerEventsOverflow = "EventsOverflow"
)

// Annotations and files of event-triggered syncs.
const (
	// AnnotationEventBatch names the batch a sync Job applies; the batch is settled when the Job is
	// recorded.
	AnnotationEventBatch = "data.pqcache.dev/event-batch"
	changesKey           = "changes.json"
	changesMountPath     = "/changes"
)

// EventTokenSecret names the Secret holding a Dataset's webhook token: the one its spec names, or the
// one the operator creates for it, NAME-events-token.
func EventTokenSecret(ds *datav1alpha1.Dataset) string {
	if e := ds.Spec.Refresh.Events; e != nil && e.Webhook != nil && e.Webhook.TokenSecretRef != nil {
		return e.Webhook.TokenSecretRef.Name
	}
	return jobs.FitName(ds.Name, "-events-token", jobs.MaxObjectName)
}

// EventTokenKey is the key of the webhook token in its Secret.
const EventTokenKey = "token"

// changesConfigMap is the ConfigMap holding a targeted sync Job's change set: the Job's name.
func changesConfigMap(ds *datav1alpha1.Dataset, jobName string, b *EventBatch) (*corev1.ConfigMap, error) {
	data, err := json.Marshal(wire.ChangeSet{Changes: b.Changes})
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: jobName,
			Labels: map[string]string{jobs.LabelName: "pqcache", jobs.LabelManagedBy: "pqcache", jobs.LabelDataset: datav1alpha1.LabelValue(ds.Name), jobs.LabelComponent: jobs.ComponentSync}},
		Data: map[string]string{changesKey: string(data)},
	}, nil
}

// mountChanges mounts a targeted sync's change set, the ConfigMap named configMap, where its
// --changes points.
func mountChanges(spec *corev1.PodSpec, configMap string) {
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "changes", MountPath: changesMountPath, ReadOnly: true})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "changes", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}})
}

// setEventConditions shows the event source's health on its own condition, which kstatus does not
// read: a broken source leaves the Dataset Ready, on its schedule.
func setEventConditions(ds *datav1alpha1.Dataset, st *datav1alpha1.EventStatus, problem *EventProblem) {
	if ds.Spec.Refresh.Events == nil {
		ds.Status.Events = nil
		meta.RemoveStatusCondition(&ds.Status.Conditions, datav1alpha1.ConditionEventSource)
		return
	}
	if prev := ds.Status.Events; prev != nil {
		// What listing syncs found is the controller's count, not the source's.
		st.FoundByListing, st.LastFoundByListingTime = prev.FoundByListing, prev.LastFoundByListingTime
	}
	ds.Status.Events = st
	c := metav1.Condition{Type: datav1alpha1.ConditionEventSource, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonEventsFlowing,
		Message: fmt.Sprintf("Notifications from %s are applied by targeted syncs", st.Source), ObservedGeneration: ds.Generation}
	if problem != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, problem.Reason, problem.Message
	}
	meta.SetStatusCondition(&ds.Status.Conditions, c)
}

// countsUnannounced says whether a listing sync of this trigger can tell that notifications were lost:
// the schedule's listing, its retry and a manual one. A first sync, a changed source or an overflow
// finds changes that no notification was expected to announce.
func countsUnannounced(trigger string) bool {
	switch trigger {
	case TriggerScheduled, TriggerRetry, TriggerManual:
		return true
	}
	return false
}

// noteUnannounced counts, after a successful listing sync of a Dataset with an event source, the
// changes it found that no notification had announced: the files it copied or deleted beyond the
// changes the source still holds (pending, or in the batch this sync applied), so a notification that
// merely arrived during the listing is not taken for a lost one. prevListing is the start of the
// listing sync before this one. It returns how many it counted, and whether the previous listing found
// some too: once is a hiccup, twice in a row a store that loses notifications.
func noteUnannounced(st *datav1alpha1.DatasetStatus, prevListing *metav1.Time, outstanding int64) (found int64, repeated bool) {
	ls := st.LastSync
	if ls == nil || ls.Result != datav1alpha1.SyncSucceeded || !countsUnannounced(ls.Trigger) {
		return 0, false
	}
	found = ls.FilesCopied + ls.FilesDeleted - outstanding
	if found <= 0 {
		return 0, false
	}
	if st.Events == nil {
		st.Events = &datav1alpha1.EventStatus{}
	}
	ev := st.Events
	repeated = prevListing != nil && ev.LastFoundByListingTime != nil && ev.LastFoundByListingTime.Equal(prevListing)
	ev.FoundByListing += found
	ev.LastFoundByListingTime = ls.StartTime
	return found, repeated
}
