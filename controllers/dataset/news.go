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
	"fmt"
	"slices"

	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// news is what a reconcile step learned that is logged, counted, sent as events and settled with the
// event hub only once the status recording it is written: a reconcile from a stale cache, whose write
// is refused, must never count a sync twice. The steps return it as data; Reconcile tells it (tell),
// at the one place where status is written.
type news struct {
	// syncs are the finished syncs recorded, as recorded (the metrics read their lastSync).
	syncs []syncNews
	// batches are the batches of event notifications the recorded syncs applied.
	batches []batchNews
	// foundByListing counts the changes listing syncs found that no notification announced.
	foundByListing int64
	events         []eventNews
	logs           []logNews
}

type syncNews struct {
	lastSync datav1alpha1.SyncResult
	ok       bool
}

type batchNews struct {
	id      string
	ok      bool
	outcome *wire.ChangeOutcome
}

// eventNews is one Kubernetes event about the Dataset, its note formatted.
type eventNews struct {
	related                   client.Object
	typ, reason, action, note string
}

// logNews is one log line about the Dataset: its message and key/values beyond the Dataset's.
type logNews struct {
	msg string
	kv  []any
}

// eventNoteLimit is the most an events.k8s.io/v1 Event's note may hold (the API server refuses a
// longer one, and the recorder drops that event without retrying): a note that quotes a sync's
// message, itself up to 1024 bytes, must be cut.
const eventNoteLimit = 1024

func (n *news) event(related client.Object, typ, reason, action, note string, args ...any) {
	n.events = append(n.events, eventNews{related: related, typ: typ, reason: reason, action: action,
		note: wire.Truncate(fmt.Sprintf(note, args...), eventNoteLimit)})
}

func (n *news) log(msg string, kv ...any) { n.logs = append(n.logs, logNews{msg: msg, kv: kv}) }

// settles says whether a recorded sync applied the batch id: settled once the status is written, it
// must not start another sync meanwhile.
func (n *news) settles(id string) bool {
	return slices.ContainsFunc(n.batches, func(b batchNews) bool { return b.id == id })
}

// tell logs, counts, sends and settles the news about ds, whose status recording it is written.
// hub and rec may be nil: the operator runs no event sources, or a test records no events.
func (n *news) tell(ctx context.Context, ds *datav1alpha1.Dataset, hub EventHub, rec events.EventRecorder) {
	key := client.ObjectKeyFromObject(ds)
	for _, b := range n.batches {
		if hub == nil {
			break
		}
		if lag, has := hub.Done(key, b.id, b.ok, b.outcome); has {
			observeEventLag(ds, lag)
		}
	}
	for i := range n.syncs {
		observeSync(ds, &n.syncs[i].lastSync, n.syncs[i].ok)
	}
	if n.foundByListing > 0 {
		observeFoundByListing(ds, n.foundByListing)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("dataset", klog.KObj(ds))
	for _, l := range n.logs {
		log.Info(l.msg, l.kv...)
	}
	if rec == nil {
		return
	}
	for _, e := range n.events {
		rec.Eventf(ds, e.related, e.typ, e.reason, e.action, "%s", e.note)
	}
}
