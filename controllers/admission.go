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

package controllers

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// admission caps the sync Jobs running at once across the cluster, and lets the Datasets that have
// waited longest go first, so that one huge Dataset, or many small ones, cannot starve the rest. It
// lives in the manager's memory: after a restart, waiting Datasets queue again in reconcile order.
type admission struct {
	mu      sync.Mutex
	limit   int
	waiting map[types.NamespacedName]time.Time // since when each Dataset has had a sync due
	started map[types.NamespacedName]time.Time // admitted, not yet seen as a running Job
}

func newAdmission(limit int) *admission {
	return &admission{limit: limit, waiting: map[types.NamespacedName]time.Time{}, started: map[types.NamespacedName]time.Time{}}
}

// startedGrace is how long an admitted Dataset counts as running before its Job shows up in the cache.
const startedGrace = 30 * time.Second

// Admit reports whether key may start a sync now, given the number of sync Jobs the cache shows running
// (active, which may include key's own). A key admitted is no longer waiting.
func (a *admission) Admit(key types.NamespacedName, active int, now time.Time) bool {
	if a == nil || a.limit <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.waiting[key]; !ok {
		a.waiting[key] = now
	}
	for k, at := range a.started {
		if now.Sub(at) > startedGrace {
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
func (a *admission) Running(key types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.started, key)
}

// Forget drops key from the queue (no sync due any more, or the Dataset is gone).
func (a *admission) Forget(key types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, key)
	delete(a.started, key)
}

// Waiting returns the Datasets queued for a slot, so that a finished sync can wake them at once.
func (a *admission) Waiting() []types.NamespacedName {
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
