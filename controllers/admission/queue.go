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

package admission

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pqcache/pqcache/controllers/jobs"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue caps the Jobs of one kind running at once across the cluster, and lets the keys that have
// waited longest go first, so that one huge Dataset, or many small ones, cannot starve the rest. A key
// is a Dataset ("namespace/name"), or one Job of a BenchRun ("namespace/run/job": names cannot hold
// '/'). It lives in the manager's memory: after a restart, waiting keys queue again in reconcile
// order. Every exit path of its owner forgets its keys (ForgetOwner), and a periodic Sweep drops those
// of objects that are gone, so that a missed event cannot hold a place in the queue for good.
type Queue struct {
	mu      sync.Mutex
	limit   int
	waiting map[types.NamespacedName]time.Time // since when each Dataset has had a sync due
	started map[types.NamespacedName]time.Time // admitted, not yet seen as a running Job
	// For bench Jobs admitted per node (the NodeWant of each, nodes.go): where each waiting key may run, and the
	// keys admitted whose pod has no node yet.
	wants   map[types.NamespacedName]NodeWant
	placing map[types.NamespacedName]time.Time
}

// NewQueue is a queue that lets limit Jobs run at once (0: no cap).
func NewQueue(limit int) *Queue {
	return &Queue{limit: limit, waiting: map[types.NamespacedName]time.Time{}, started: map[types.NamespacedName]time.Time{},
		wants: map[types.NamespacedName]NodeWant{}, placing: map[types.NamespacedName]time.Time{}}
}

// StartedGrace is how long an admitted Dataset counts as running before its Job shows up in the cache.
const StartedGrace = 30 * time.Second

// Admit reports whether key may start a sync now, given the number of sync Jobs the cache shows running
// (active, which may include key's own). A key admitted is no longer waiting.
func (a *Queue) Admit(key types.NamespacedName, active int, now time.Time) bool {
	if a == nil || a.limit <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[key]; !ok {
		a.waiting[key] = now
	}
	for k, at := range a.started {
		if now.Sub(at) > StartedGrace {
			delete(a.started, k)
		}
	}
	free := a.limit - active - len(a.started)
	if free <= 0 {
		return false
	}
	// Admit only the `free` longest-waiting keys.
	keys := make([]types.NamespacedName, 0, len(a.waiting))
	for k := range a.waiting {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := a.waiting[keys[i]], a.waiting[keys[j]]
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return keys[i].String() < keys[j].String()
	})
	for i := 0; i < free && i < len(keys); i++ {
		if keys[i] == key {
			delete(a.waiting, key)
			a.started[key] = now
			return true
		}
	}
	return false
}

// Running tells the admission that key's Job is visible (it no longer needs the grace slot).
func (a *Queue) Running(key types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.started, key)
}

// Forget drops key from the queue (no sync due any more, or the Dataset is gone).
func (a *Queue) Forget(key types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, key)
	delete(a.started, key)
	delete(a.wants, key)
	delete(a.placing, key)
}

// ownerOf is the object a key belongs to: the Dataset itself, or the BenchRun of a "run/job" key.
func ownerOf(key types.NamespacedName) types.NamespacedName {
	name, _, _ := strings.Cut(key.Name, "/")
	return types.NamespacedName{Namespace: key.Namespace, Name: name}
}

// ForgetOwner drops every key of one object: a Dataset's key, or all of a BenchRun's Job keys. Called
// when the object finished, is deleted or cannot run.
func (a *Queue) ForgetOwner(owner types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range []map[types.NamespacedName]time.Time{a.waiting, a.started, a.placing} {
		for k := range m {
			if ownerOf(k) == owner {
				delete(m, k)
				delete(a.wants, k)
			}
		}
	}
}

// Sweep drops the keys whose owner no longer exists, and returns how many it dropped. exists is called
// without the lock held (it may read from the API).
func (a *Queue) Sweep(ctx context.Context, exists func(context.Context, types.NamespacedName) bool) int {
	if a == nil {
		return 0
	}
	owners := map[types.NamespacedName]bool{}
	a.mu.Lock()
	for _, m := range []map[types.NamespacedName]time.Time{a.waiting, a.started, a.placing} {
		for k := range m {
			owners[ownerOf(k)] = true
		}
	}
	a.mu.Unlock()
	n := 0
	for o := range owners {
		if ctx.Err() != nil {
			break
		}
		if !exists(ctx, o) {
			a.mu.Lock()
			for _, m := range []map[types.NamespacedName]time.Time{a.waiting, a.started, a.placing} {
				for k := range m {
					if ownerOf(k) == o {
						delete(m, k)
						delete(a.wants, k)
						n++
					}
				}
			}
			a.mu.Unlock()
		}
	}
	return n
}

// Len is the number of keys held, waiting or started.
func (a *Queue) Len() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiting) + len(a.started)
}

// Waiting returns the keys queued for a slot, so that a finished Job can wake their owners at once.
func (a *Queue) Waiting() []types.NamespacedName {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(a.waiting))
	for k := range a.waiting {
		keys = append(keys, k)
	}
	return keys
}

// defaultSweepInterval is how often the admission queues drop keys of objects that are gone.
const defaultSweepInterval = 5 * time.Minute

// Sweeper drops, every interval while the manager runs, the keys of objects the cache no
// longer has, whatever event was missed, and then wakes the owners still waiting (through Source):
// the places the dropped keys held are free now.
type Sweeper struct {
	a        *Queue
	interval time.Duration
	newObj   func() client.Object
	wake     chan event.GenericEvent
}

// NewSweeper sweeps a every interval (0: the default, 5m), reading objects made by newObj.
func NewSweeper(a *Queue, interval time.Duration, newObj func() client.Object) *Sweeper {
	if interval <= 0 {
		interval = defaultSweepInterval
	}
	return &Sweeper{a: a, interval: interval, newObj: newObj, wake: make(chan event.GenericEvent, 64)}
}

// Source feeds the controller the wake-ups.
func (s *Sweeper) Source() source.Source {
	return source.Channel(s.wake, &handler.EnqueueRequestForObject{})
}

// Add runs the sweep with mgr.
func (s *Sweeper) Add(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	log := mgr.GetLogger().WithName("admission-sweep")
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			exists := func(ctx context.Context, key types.NamespacedName) bool {
				return !apierrors.IsNotFound(c.Get(ctx, key, s.newObj()))
			}
			n := s.a.Sweep(ctx, exists)
			if n == 0 {
				continue
			}
			log.Info("Dropped queued keys of objects that are gone", "keys", n)
			seen := map[types.NamespacedName]bool{}
			for _, k := range s.a.Waiting() {
				o := ownerOf(k)
				if seen[o] {
					continue
				}
				seen[o] = true
				obj := s.newObj()
				obj.SetNamespace(o.Namespace)
				obj.SetName(o.Name)
				select {
				case s.wake <- event.GenericEvent{Object: obj}:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}))
}

// SlotFreed wakes the owners waiting in a for a slot whenever a Job of component frees one: when it
// finishes, and when it is deleted unfinished (by a person, or by the garbage collector after its
// owner went), which no Job condition announces.
func SlotFreed(a *Queue, component string) handler.EventHandler {
	wake := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		seen := map[types.NamespacedName]bool{}
		for _, k := range a.Waiting() {
			if o := ownerOf(k); !seen[o] {
				seen[o] = true
				q.Add(reconcile.Request{NamespacedName: o})
			}
		}
	}
	ours := func(o client.Object) (*batchv1.Job, bool) {
		j, ok := o.(*batchv1.Job)
		return j, ok && j.Labels[jobs.LabelComponent] == component
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if j, ok := ours(e.ObjectNew); ok && jobs.StateOf(j).Finished {
				wake(q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if _, ok := ours(e.Object); ok {
				wake(q)
			}
		},
	}
}
