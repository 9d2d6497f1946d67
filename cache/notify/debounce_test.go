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

package notify

import (
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock runs timers synchronously, in time order, when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, running every timer that falls due on the way.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for {
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *fakeTimer
		for i, t := range c.timers {
			if !t.stopped && !t.at.After(target) {
				next = t
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		if next == nil {
			c.now = target
			c.timers = slicesDeleteStopped(c.timers)
			c.mu.Unlock()
			return
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		next.stopped = true
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
}

func slicesDeleteStopped(ts []*fakeTimer) []*fakeTimer {
	out := ts[:0]
	for _, t := range ts {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

// harness is a Debouncer on a fake clock with one Dataset "ns/ds" mirroring s3://lake/tpch/.
type harness struct {
	t       *testing.T
	clock   *fakeClock
	d       *Debouncer
	batches []*Batch
	acks    map[string][]bool // by message name: each settlement
}

const dsKey = "ns/ds"

func newHarness(t *testing.T, cfg DebounceConfig) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), acks: map[string][]bool{}}
	cfg.Clock = h.clock
	h.d = NewDebouncer(cfg, func(b *Batch) { h.batches = append(h.batches, b) })
	scope, err := NewScope("lake", "tpch/", nil, []string{"**/_tmp/**"}, []string{"lineitem/dt=2026-01-02/"})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Configure(dsKey, scope)
	t.Cleanup(h.d.Close)
	return h
}

// add delivers a message named name holding changes.
func (h *harness) add(name string, changes ...Change) int {
	h.t.Helper()
	n, err := h.d.Add(dsKey, Message{Changes: changes}, func(ok bool) { h.acks[name] = append(h.acks[name], ok) })
	if err != nil {
		h.t.Fatalf("Add(%s): %v", name, err)
	}
	return n
}

func (h *harness) stats() Stats {
	h.t.Helper()
	s, ok := h.d.Stats(dsKey)
	if !ok {
		h.t.Fatal("no stats for", dsKey)
	}
	return s
}

// checkBalance asserts that every received change is accounted for exactly once.
func (h *harness) checkBalance() {
	h.t.Helper()
	s := h.stats()
	if got := s.Ignored + s.Coalesced + s.Applied + s.Stale + int64(s.Pending) + int64(s.InFlight); got != s.Received {
		h.t.Errorf("counters do not add up: received %d, ignored %d + coalesced %d + applied %d + stale %d + pending %d + in flight %d = %d",
			s.Received, s.Ignored, s.Coalesced, s.Applied, s.Stale, s.Pending, s.InFlight, got)
	}
}

func put(key, seq string) Change {
	return Change{Bucket: "lake", Key: key, Size: 10, ETag: `"e` + seq + `"`, Sequencer: seq, EventTime: time.Date(2026, 1, 2, 3, 3, 59, 0, time.UTC)}
}

func del(key, seq string) Change {
	return Change{Bucket: "lake", Key: key, Removed: true, Sequencer: seq, EventTime: time.Date(2026, 1, 2, 3, 3, 59, 0, time.UTC)}
}

func keysOf(b *Batch) []string {
	var out []string
	for _, c := range b.Changes {
		out = append(out, c.Key)
	}
	return out
}

func TestDebounceWindowAfterLastChange(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("m1", put("tpch/orders/b.parquet", "01"))
	h.clock.Advance(time.Second)
	h.add("m2", put("tpch/orders/a.parquet", "02"))
	h.clock.Advance(DefaultWindow - time.Millisecond)
	if len(h.batches) != 0 {
		t.Fatalf("a batch flushed %s after the last change, before the %s window", DefaultWindow-time.Millisecond, DefaultWindow)
	}
	h.clock.Advance(time.Millisecond)
	if len(h.batches) != 1 {
		t.Fatalf("%d batches after the window, want 1", len(h.batches))
	}
	b := h.batches[0]
	if diff := cmp.Diff([]string{"tpch/orders/a.parquet", "tpch/orders/b.parquet"}, keysOf(b)); diff != "" {
		t.Errorf("batch keys (-want +got):\n%s", diff)
	}
	if b.Changes[0].Rel != "orders/a.parquet" || b.Overflow != "" || b.Fresh || b.Count != 2 {
		t.Errorf("batch = %+v, want Rel relative to the prefix, no overflow, not fresh, count 2", b)
	}
	if len(h.acks) != 0 {
		t.Errorf("sources were settled before the batch was acknowledged: %v", h.acks)
	}
	res := b.Ack(Outcome{})
	if res.Applied != 2 || res.Stale != 0 {
		t.Errorf("Ack = %+v, want 2 applied", res)
	}
	if diff := cmp.Diff(map[string][]bool{"m1": {true}, "m2": {true}}, h.acks); diff != "" {
		t.Errorf("settlements after Ack (-want +got):\n%s", diff)
	}
	h.checkBalance()
}

func TestDebounceMaxDelayUnderASteadyStream(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	for i := range 15 {
		h.add("m", put("tpch/orders/"+string(rune('a'+i)), "01"))
		h.clock.Advance(time.Second)
		if i < 9 && len(h.batches) != 0 {
			t.Fatalf("flushed after %d s of a steady stream, before the %s maximum delay", i+1, DefaultMaxDelay)
		}
		if i == 9 && len(h.batches) != 1 {
			t.Fatalf("no flush %s after the first change of a steady stream", DefaultMaxDelay)
		}
	}
	if got := h.batches[0].Count; got != 10 {
		t.Errorf("first batch holds %d changes, want the 10 of its first 10 s", got)
	}
	// The next batch waits for the first to be acknowledged.
	if len(h.batches) != 1 {
		t.Fatalf("%d batches in flight, want 1", len(h.batches))
	}
	// The 5 later changes (t = 10..14 s) flush 2 s after the last of them, once the first batch is done.
	h.batches[0].Ack(Outcome{})
	h.clock.Advance(0)
	if len(h.batches) != 1 {
		t.Fatal("the second batch flushed before its window")
	}
	h.clock.Advance(time.Second)
	if len(h.batches) != 2 || h.batches[1].Count != 5 {
		t.Fatalf("after the ack and the window: %d batches, want a second one with the 5 later changes", len(h.batches))
	}
	h.checkBalance()
}

// TestDebounceScopeOverridesWindowAndMaxDelay: a Dataset whose scope sets its own window and maximum
// delay (one with per-node copies) flushes by them, not by the Debouncer's.
func TestDebounceScopeOverridesWindowAndMaxDelay(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	scope, err := NewScope("lake", "tpch/", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope.Window, scope.MaxDelay = 200*time.Millisecond, time.Second
	h.d.Configure(dsKey, scope)
	h.add("m1", put("tpch/orders/a.parquet", "01"))
	h.clock.Advance(199 * time.Millisecond)
	if len(h.batches) != 0 {
		t.Fatal("flushed before the Dataset's 200ms window")
	}
	h.clock.Advance(time.Millisecond)
	if len(h.batches) != 1 {
		t.Fatalf("%d batches 200ms after the change, want 1", len(h.batches))
	}
	h.batches[0].Ack(Outcome{})
	for i := range 8 { // a change every 150ms: the window never closes, the 1s maximum delay flushes
		h.add("m", put("tpch/orders/"+string(rune('b'+i)), "02"))
		h.clock.Advance(150 * time.Millisecond)
	}
	if len(h.batches) != 2 || h.batches[1].Count != 7 {
		t.Fatalf("%d batches under a steady stream; want a second one at the 1s maximum delay, with the 7 changes before it", len(h.batches))
	}
	h.checkBalance()
}

func TestDebounceKeepsTheNewestChangePerKey(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("dup1", put("tpch/a", "0A"))
	h.add("dup2", put("tpch/a", "0A"))   // a duplicate delivery
	h.add("new", del("tpch/b", "0000C")) // newer, shorter and longer sequencers mixed
	h.add("old", put("tpch/b", "0B"))    // reordered: older than the delete, arrives after it
	h.add("tie", del("tpch/c", "05"))
	h.add("tie2", put("tpch/c", "05")) // equal sequencers: the later event wins
	h.clock.Advance(DefaultWindow)
	if len(h.batches) != 1 {
		t.Fatalf("%d batches, want 1", len(h.batches))
	}
	got := h.batches[0].Changes
	want := []Change{
		{Bucket: "lake", Key: "tpch/a", Rel: "a", Size: 10, ETag: `"e0A"`, Sequencer: "0A", EventTime: put("", "").EventTime},
		{Bucket: "lake", Key: "tpch/b", Rel: "b", Removed: true, Sequencer: "0000C", EventTime: put("", "").EventTime},
		{Bucket: "lake", Key: "tpch/c", Rel: "c", Size: 10, ETag: `"e05"`, Sequencer: "05", EventTime: put("", "").EventTime},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch (-want +got):\n%s", diff)
	}
	if s := h.stats(); s.Coalesced != 3 || s.Received != 6 {
		t.Errorf("stats = %+v, want 6 received, 3 coalesced", s)
	}
	h.batches[0].Ack(Outcome{})
	if len(h.acks) != 6 {
		t.Errorf("settled %d messages, want all 6 (coalesced ones included)", len(h.acks))
	}
	h.checkBalance()
}

func TestDebounceIgnoresWhatTheDatasetDoesNotMirror(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	n := h.add("outside",
		Change{Bucket: "other", Key: "tpch/a"},
		Change{Bucket: "lake", Key: "raw/a"},
		Change{Bucket: "lake", Key: "tpch/orders/_tmp/x"},
		Change{Bucket: "lake", Key: "tpch/orders/"},
		Change{Bucket: "lake", Key: "tpch/"},
	)
	if n != 0 {
		t.Fatalf("Add took %d changes, want 0", n)
	}
	if diff := cmp.Diff(map[string][]bool{"outside": {false}}, h.acks); diff != "" {
		t.Errorf("a message with nothing for the Dataset must be settled at once, and left for other consumers (-want +got):\n%s", diff)
	}
	if _, err := h.d.Add(dsKey, Message{Test: true}, func(ok bool) { h.acks["test"] = append(h.acks["test"], ok) }); err != nil {
		t.Fatal(err)
	}
	if _, err := h.d.Add(dsKey, Message{Ignored: 2}, nil); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	if len(h.batches) != 0 {
		t.Errorf("ignored changes made a batch: %+v", h.batches[0])
	}
	if s := h.stats(); s.Ignored != 7 || s.Received != 7 || s.Pending != 0 {
		t.Errorf("stats = %+v, want 7 received and ignored", s)
	}
	if got := h.acks["test"]; len(got) != 1 || got[0] {
		t.Errorf("a test message was settled %v, want once with false (not the Dataset's to delete)", got)
	}
	h.checkBalance()
}

func TestDebounceOverflow(t *testing.T) {
	h := newHarness(t, DebounceConfig{MaxKeys: 3})
	for i, k := range []string{"a", "b", "c", "d", "a"} {
		h.add(k+string(rune('0'+i)), put("tpch/"+k, "0"+string(rune('1'+i))))
	}
	h.clock.Advance(DefaultWindow)
	if len(h.batches) != 1 {
		t.Fatalf("%d batches, want 1", len(h.batches))
	}
	b := h.batches[0]
	if b.Overflow != OverflowTooManyKeys || len(b.Changes) != 0 || b.Count != 5 {
		t.Errorf("batch = {Overflow %q, %d changes, Count %d}, want TooManyKeys, none, 5", b.Overflow, len(b.Changes), b.Count)
	}
	if res := b.Ack(Outcome{Stale: []string{"tpch/a"}}); res.Applied != 5 {
		t.Errorf("an acknowledged overflow applied %d, want all 5 (a listing sync covers them)", res.Applied)
	}
	if len(h.acks) != 5 {
		t.Errorf("settled %d messages, want 5", len(h.acks))
	}
	h.checkBalance()
}

func TestDebounceLostEventsForceAListing(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("m1", put("tpch/a", "01"))
	if err := h.d.Lost(dsKey, func(ok bool) { h.acks["garbled"] = append(h.acks["garbled"], ok) }); err != nil {
		t.Fatal(err)
	}
	h.add("m2", put("tpch/b", "02"))
	h.clock.Advance(DefaultWindow)
	if len(h.batches) != 1 || h.batches[0].Overflow != OverflowEventsLost {
		t.Fatalf("batches = %+v, want one EventsLost overflow", h.batches)
	}
	h.batches[0].Ack(Outcome{})
	if diff := cmp.Diff(map[string][]bool{"m1": {true}, "garbled": {true}, "m2": {true}}, h.acks); diff != "" {
		t.Errorf("settlements (-want +got):\n%s", diff)
	}
	if s := h.stats(); s.Lost != 1 || s.Applied != 2 {
		t.Errorf("stats = %+v, want 1 lost, 2 applied", s)
	}
	if err := h.d.Lost("ns/unknown", nil); !errors.Is(err, ErrUnknownDataset) {
		t.Errorf("Lost for an unknown key: %v", err)
	}
}

func TestDebounceFreshPrefixFlushesFirst(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("old", put("tpch/orders/a", "01"))
	h.clock.Advance(200 * time.Millisecond)
	h.add("fresh", put("tpch/lineitem/dt=2026-01-02/part-0.parquet", "02"))
	h.clock.Advance(100 * time.Millisecond)
	h.add("fresh2", put("tpch/lineitem/dt=2026-01-02/part-1.parquet", "03"))
	h.clock.Advance(DefaultFreshDelay - 100*time.Millisecond - time.Millisecond)
	if len(h.batches) != 0 {
		t.Fatal("flushed before the fresh delay")
	}
	h.clock.Advance(time.Millisecond)
	if len(h.batches) != 1 {
		t.Fatalf("no flush %s after the first fresh change (the window is %s)", DefaultFreshDelay, DefaultWindow)
	}
	b := h.batches[0]
	if !b.Fresh || b.Count != 3 {
		t.Errorf("batch = {Fresh %v, Count %d}, want fresh with all 3 changes", b.Fresh, b.Count)
	}
	// A batch with no fresh change keeps the normal window.
	b.Ack(Outcome{})
	h.add("later", put("tpch/orders/b", "04"))
	h.clock.Advance(DefaultFreshDelay)
	if len(h.batches) != 1 {
		t.Error("a batch without a fresh change flushed at the fresh delay")
	}
	h.clock.Advance(DefaultWindow - DefaultFreshDelay)
	if len(h.batches) != 2 || h.batches[1].Fresh {
		t.Errorf("%d batches, want a second, not fresh", len(h.batches))
	}
}

func TestDebounceNackRequeues(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("m1", put("tpch/a", "05"), put("tpch/b", "05"))
	h.clock.Advance(DefaultWindow)
	first := h.batches[0]
	// While the first batch is out, a newer change to a and an older one to b arrive.
	h.add("m2", put("tpch/a", "06"))
	h.add("m3", del("tpch/b", "04"))
	h.clock.Advance(time.Minute)
	if len(h.batches) != 1 {
		t.Fatal("a second batch flushed while the first was in flight")
	}
	first.Nack()
	first.Nack() // a second settlement does nothing
	if len(h.acks) != 0 {
		t.Errorf("a Nack settled sources: %v", h.acks)
	}
	h.clock.Advance(DefaultWindow)
	if len(h.batches) != 2 {
		t.Fatalf("the nacked changes did not flush again after the window")
	}
	got := h.batches[1].Changes
	if len(got) != 2 || got[0].Sequencer != "06" || got[1].Sequencer != "05" || got[1].Removed {
		t.Errorf("retried batch = %+v, want a@06 (newer than the nacked one) and b@05 (newer than the reordered delete)", got)
	}
	h.batches[1].Ack(Outcome{})
	if diff := cmp.Diff(map[string][]bool{"m1": {true}, "m2": {true}, "m3": {true}}, h.acks); diff != "" {
		t.Errorf("settlements (-want +got):\n%s", diff)
	}
	if res := first.Ack(Outcome{}); res != (AckResult{}) {
		t.Errorf("Ack after Nack = %+v, want nothing", res)
	}
	h.checkBalance()
}

func TestDebounceAckCountsStaleAndLag(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	early := put("tpch/a", "01")
	late := put("tpch/b", "01")
	late.EventTime = early.EventTime.Add(5 * time.Second)
	h.add("m", early, late, put("tpch/c", "01"))
	h.clock.Advance(DefaultWindow)
	published := late.EventTime.Add(3 * time.Second)
	res := h.batches[0].Ack(Outcome{Published: published, Stale: []string{"tpch/c"}})
	if want := (AckResult{Applied: 2, Stale: 1, Lag: 3 * time.Second, HasLag: true}); res != want {
		t.Errorf("Ack = %+v, want %+v", res, want)
	}
	s := h.stats()
	if s.Applied != 2 || s.Stale != 1 || s.LastLag != 3*time.Second || !s.LastPublished.Equal(published) || !s.LastEventTime.Equal(late.EventTime) {
		t.Errorf("stats = %+v", s)
	}
	// The lag is that of the newest applied change: when it is stale, the next newest counts.
	h.add("m2", early, late)
	h.clock.Advance(DefaultWindow)
	res = h.batches[1].Ack(Outcome{Published: published, Stale: []string{"tpch/b"}})
	if res.Lag != 8*time.Second {
		t.Errorf("lag = %s, want 8 s (from the older change; the newer one was stale)", res.Lag)
	}
	h.checkBalance()
}

func TestDebounceRemoveAndReconfigure(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("m1", put("tpch/a", "01"))
	scope, _ := NewScope("lake", "tpch/orders/", nil, nil, nil)
	h.d.Configure(dsKey, scope)
	h.clock.Advance(DefaultWindow)
	if len(h.batches) != 1 || h.batches[0].Overflow != OverflowScopeChanged {
		t.Fatalf("a scope change with changes pending: batches %+v, want one ScopeChanged overflow", h.batches)
	}
	inFlight := h.batches[0]
	h.add("m2", put("tpch/orders/x", "02"))
	h.d.Remove(dsKey)
	if got := h.acks["m2"]; len(got) != 1 || got[0] {
		t.Errorf("pending message on Remove settled %v, want once with false", got)
	}
	if _, ok := h.d.Stats(dsKey); ok {
		t.Error("a removed key still has stats")
	}
	if _, err := h.d.Add(dsKey, Message{Changes: []Change{put("tpch/orders/y", "03")}}, nil); !errors.Is(err, ErrUnknownDataset) {
		t.Errorf("Add after Remove: %v, want ErrUnknownDataset", err)
	}
	inFlight.Ack(Outcome{})
	if got := h.acks["m1"]; len(got) != 1 || !got[0] {
		t.Errorf("the in-flight batch's message settled %v after its Ack, want once with true", got)
	}
	if keys := h.d.Keys(); len(keys) != 0 {
		t.Errorf("Keys after Remove = %v, want none", keys)
	}
}

func TestDebounceOverdueBatchFlushesOnAck(t *testing.T) {
	h := newHarness(t, DebounceConfig{})
	h.add("m1", put("tpch/a", "01"))
	h.clock.Advance(DefaultWindow)
	h.add("m2", put("tpch/b", "02"))
	h.clock.Advance(time.Minute) // far past m2's window, but m1's batch is still out
	if len(h.batches) != 1 {
		t.Fatalf("%d batches with one in flight, want 1", len(h.batches))
	}
	h.batches[0].Ack(Outcome{})
	h.clock.Advance(0)
	if len(h.batches) != 2 || h.batches[1].Changes[0].Key != "tpch/b" {
		t.Fatalf("an overdue pending batch did not flush as soon as the previous one was acknowledged")
	}
}

// TestDebounceConcurrent drives a Debouncer on the real clock from many goroutines (run with -race):
// every message is settled exactly once, with true, and the counters balance.
func TestDebounceConcurrent(t *testing.T) {
	var mu sync.Mutex
	settled := map[int]int{}
	done := make(chan struct{})
	var emitted atomic.Int64
	d := NewDebouncer(DebounceConfig{Window: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxKeys: 50}, func(b *Batch) {
		n := emitted.Add(1)
		go func() {
			if n%3 == 0 { // every third batch fails once and is retried
				b.Nack()
				return
			}
			b.Ack(Outcome{})
		}()
	})
	defer d.Close()
	scope, _ := NewScope("lake", "", nil, nil, nil)
	d.Configure(dsKey, scope)
	const senders, perSender = 8, 100
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				id := s*perSender + i
				c := Change{Bucket: "lake", Key: "k" + string(rune('a'+i%26)), Sequencer: "01"}
				if _, err := d.Add(dsKey, Message{Changes: []Change{c}}, func(ok bool) {
					mu.Lock()
					defer mu.Unlock()
					if ok {
						settled[id]++
					}
					if len(settled) == senders*perSender {
						select {
						case <-done:
						default:
							close(done)
						}
					}
				}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("only %d of %d messages settled", len(settled), senders*perSender)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range settled {
		if n != 1 {
			t.Errorf("message %d settled %d times", id, n)
		}
	}
	s, _ := d.Stats(dsKey)
	if s.Received != senders*perSender || s.Ignored+s.Coalesced+s.Applied+s.Stale+int64(s.Pending+s.InFlight) != s.Received {
		t.Errorf("counters do not balance: %+v", s)
	}
}
