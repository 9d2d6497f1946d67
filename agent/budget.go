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

package agent

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// Budget is the node's parallelism budget: the GETs in flight of every sync on the node, whatever
// the number of Datasets. Memory is bounded the same way: a GET buffers at most a part
// (sync.partSize) at a time.
//
// A slot is held for one GET only (cache.Options.Slots), never while a sync lists, plans or
// publishes, so a Dataset whose bucket lists slowly holds none. The budget is shared fairly
// (max-min): a Dataset takes a free slot at once only when no GET waits; when GETs wait, each slot
// that frees goes to the waiting Dataset that holds the fewest, the earliest waiter first on a tie.
// Datasets that want slots thus converge, as GETs end (a part at most, bounded in time), to
// total/n slots each for n Datasets that want them, and a Dataset that wants fewer leaves the rest
// to the others: no slot stays idle while a GET waits, and one Dataset with a large parallelism
// cannot starve another. A fixed cap per Dataset (total/2 when two are active) would leave slots
// idle when the other needs fewer, and would not be fair among three.
type Budget struct {
	total int

	mu   sync.Mutex
	free int
	// held is how many slots each Dataset holds; a Dataset with none is forgotten.
	held map[string]int
	// waiting are the GETs waiting for a slot, in arrival order; it is empty whenever free > 0.
	waiting []*waiter
}

type waiter struct {
	key   string
	grant chan struct{} // closed when the slot is the waiter's
}

// NewBudget is a budget of total concurrent GETs.
func NewBudget(total int) *Budget {
	total = max(total, 1)
	return &Budget{total: total, free: total, held: map[string]int{}}
}

// Total is the number of slots: a sync runs at most this many GETs, whatever its parallelism.
func (b *Budget) Total() int { return b.total }

// For is the share of the budget of the Dataset named key (namespace/name), for its syncs'
// cache.Options.Slots.
func (b *Budget) For(key string) *Share { return &Share{b: b, key: key} }

// Share is one Dataset's access to its node's Budget.
type Share struct {
	b   *Budget
	key string
}

// Acquire waits for a slot, or for ctx to end.
func (s *Share) Acquire(ctx context.Context) error { return s.b.acquire(ctx, s.key) }

// Release gives back a slot that Acquire got.
func (s *Share) Release() { s.b.release(s.key) }

func (b *Budget) acquire(ctx context.Context, key string) error {
	b.mu.Lock()
	if b.free > 0 {
		b.free--
		b.held[key]++
		b.mu.Unlock()
		return nil
	}
	w := &waiter{key: key, grant: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()
	select {
	case <-w.grant:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	select {
	case <-w.grant:
		// Granted while ctx ended: the slot is ours, and goes on to the next waiter.
		b.mu.Unlock()
		b.release(key)
	default:
		b.waiting = slices.DeleteFunc(b.waiting, func(x *waiter) bool { return x == w })
		b.mu.Unlock()
	}
	return context.Cause(ctx)
}

// release hands the slot to the waiter whose Dataset holds the fewest, or frees it.
func (b *Budget) release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[key]--; b.held[key] <= 0 {
		delete(b.held, key)
	}
	if len(b.waiting) == 0 {
		b.free++
		return
	}
	next := 0
	for i, w := range b.waiting {
		if b.held[w.key] < b.held[b.waiting[next].key] {
			next = i
		}
	}
	w := b.waiting[next]
	b.waiting = slices.Delete(b.waiting, next, next+1)
	b.held[w.key]++
	close(w.grant)
}

// state is what the budget holds and how many GETs wait, for tests.
func (b *Budget) state() (free int, held map[string]int, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free, maps.Clone(b.held), len(b.waiting)
}
