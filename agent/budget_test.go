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
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waitFor queues one Acquire of share in a goroutine, waits until the budget counts it as waiting
// (waiting reaches want), and returns the channel its result arrives on.
func waitFor(ctx context.Context, t *testing.T, b *Budget, s *Share, want int) <-chan error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- s.Acquire(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if _, _, n := b.state(); n == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Acquire never queued (want %d waiting)", want)
		}
	}
}

// mustGet waits for the Acquire whose result arrives on c, and fails the test if it failed.
func mustGet(t *testing.T, c <-chan error) {
	t.Helper()
	select {
	case err := <-c:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Acquire got no slot")
	}
}

// holds checks who holds the budget's slots and how many Acquires wait: grants are decided under
// the budget's lock when a slot is released, so this is exact, whenever the waiters' goroutines run.
func holds(t *testing.T, b *Budget, want map[string]int, waiting int) {
	t.Helper()
	_, held, n := b.state()
	if d := cmp.Diff(want, held); d != "" || n != waiting {
		t.Fatalf("slots held (-want +got):\n%s%d waiting, want %d", d, n, waiting)
	}
}

// A Dataset alone takes the whole budget; once a second one waits, every slot that frees goes to the
// Dataset holding the fewest, until both hold half; the big one gets a slot again only then.
func TestBudgetSharesFairly(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(4)
	big, small := b.For("team/big"), b.For("team/small")
	for range 4 {
		if err := big.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bigWaits := waitFor(ctx, t, b, big, 1) // big asks for a fifth while it holds all four
	small1 := waitFor(ctx, t, b, small, 2)
	small2 := waitFor(ctx, t, b, small, 3)

	big.Release() // big 3, small 0: small's first waiter, though big asked first
	holds(t, b, map[string]int{"team/big": 3, "team/small": 1}, 2)
	mustGet(t, small1)
	big.Release() // big 2, small 1: small again
	holds(t, b, map[string]int{"team/big": 2, "team/small": 2}, 1)
	mustGet(t, small2)
	small.Release() // big 2, small 1, only big waits: no slot stays idle
	holds(t, b, map[string]int{"team/big": 3, "team/small": 1}, 0)
	mustGet(t, bigWaits)
	for range 3 {
		big.Release()
	}
	small.Release()
	if free, held, waiting := b.state(); free != 4 || len(held) != 0 || waiting != 0 {
		t.Fatalf("after every release: %d free, held %v, %d waiting; want all 4 free and nothing remembered", free, held, waiting)
	}
}

// Three Datasets that each want more than the budget converge to a third each (rounded), whichever
// holds the slots at first.
func TestBudgetSharesAmongThree(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(6)
	a, c, d := b.For("a"), b.For("c"), b.For("d")
	for range 6 {
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var waits []<-chan error
	for i, s := range []*Share{c, d, c, d} {
		waits = append(waits, waitFor(ctx, t, b, s, i+1))
	}
	for range 4 {
		a.Release()
	}
	holds(t, b, map[string]int{"a": 2, "c": 2, "d": 2}, 0)
	for _, w := range waits {
		mustGet(t, w)
	}
}

// A wait that its context ends leaves the queue, and a slot is neither lost nor given twice.
func TestBudgetWaitEndsWithItsContext(t *testing.T) {
	b := NewBudget(1)
	one, two := b.For("one"), b.For("two")
	if err := one.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("the sync's deadline")
	w := waitFor(ctx, t, b, two, 1)
	cancel(stop)
	if err := <-w; !errors.Is(err, stop) {
		t.Fatalf("Acquire = %v, want the context's cause", err)
	}
	one.Release()
	if free, held, waiting := b.state(); free != 1 || len(held) != 0 || waiting != 0 {
		t.Fatalf("%d free, held %v, %d waiting; want the slot free", free, held, waiting)
	}
}
