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

	"golang.org/x/sync/semaphore"
)

// Budget is the node's parallelism budget: the GETs in flight of every sync on the node, whatever
// the number of Datasets. A sync asks for its Dataset's parallelism and gets at most the whole
// budget; it waits while other syncs hold the rest. Memory is bounded the same way: a GET buffers at
// most a part (sync.partSize) at a time.
type Budget struct {
	total int
	sem   *semaphore.Weighted
}

// NewBudget is a budget of total concurrent GETs.
func NewBudget(total int) *Budget {
	total = max(total, 1)
	return &Budget{total: total, sem: semaphore.NewWeighted(int64(total))}
}

// Acquire waits for want slots (at most the whole budget) and returns how many it got, and the
// function that gives them back.
func (b *Budget) Acquire(ctx context.Context, want int) (release func(), got int, err error) {
	got = min(max(want, 1), b.total)
	if err := b.sem.Acquire(ctx, int64(got)); err != nil {
		return nil, 0, err
	}
	return func() { b.sem.Release(int64(got)) }, got, nil
}
