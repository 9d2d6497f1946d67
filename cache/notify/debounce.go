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
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"
)

// Defaults of DebounceConfig.
const (
	// DefaultWindow is how long a Dataset's stream must be quiet before its batch flushes: long
	// enough to gather the files of one partition written back to back, short against the seconds
	// a sync Job needs to start.
	DefaultWindow = 2 * time.Second
	// DefaultMaxDelay bounds the wait under a steady stream: a batch flushes at most this long
	// after its first change, however busy the bucket.
	DefaultMaxDelay = 10 * time.Second
	// DefaultFreshDelay is the wait after the first change under a fresh prefix: new partitions
	// reach the volume first, still grouped with the files written alongside them.
	DefaultFreshDelay = 500 * time.Millisecond
	// DefaultMaxKeys is the size above which a batch overflows into a full listing sync: beyond a
	// few thousand keys one listing is cheaper than a HEAD per key.
	DefaultMaxKeys = 5000
)

// DebounceConfig tunes a Debouncer; zero fields take the defaults above.
type DebounceConfig struct {
	Window     time.Duration
	MaxDelay   time.Duration
	FreshDelay time.Duration
	MaxKeys    int
	Clock      Clock
}

// Ack settles the source's hold on what it delivered: ok is true once the changes are published
// (or found stale), false when they were not processed and the source may deliver them again. The
// SQS source deletes its message on true and lets it become visible again on false; the webhook
// has nothing to settle.
type Ack func(ok bool)

// Overflow reasons.
const (
	OverflowTooManyKeys  = "TooManyKeys"
	OverflowEventsLost   = "EventsLost"
	OverflowScopeChanged = "ScopeChanged"
)

// ErrUnknownDataset is returned for a key the Debouncer was not told about with Configure.
var ErrUnknownDataset = errors.New("no such dataset")

// Batch is what a Dataset's consumer receives: the changes to apply in one targeted sync, or an
// overflow that asks for a full listing sync. Exactly one of Ack and Nack must be called.
type Batch struct {
	// Key is the Dataset key the batch belongs to.
	Key string
	// Changes holds one change per object key (the newest by sequencer), sorted by Key. It is empty
	// for an overflow batch.
	Changes []Change
	// Overflow, when not empty, says why the consumer must run a full listing sync instead: one of
	// the Overflow* reasons.
	Overflow string
	// Fresh is true when a change lies under one of the Dataset's fresh prefixes.
	Fresh bool
	// Count is how many changes the batch stands for: len(Changes), or all those an overflow
	// absorbed.
	Count int
	// First and Last are when the first and the last of its changes were received.
	First, Last time.Time

	newest time.Time // the latest EventTime among its changes
	acks   []Ack
	d      *Debouncer
	ds     *dataset
	once   sync.Once
}

// Outcome is what the consumer reports when a batch's changes are done.
type Outcome struct {
	// Published is when the changes were on the volume; the zero time means now.
	Published time.Time
	// Stale lists the keys (Change.Key) that the sync found superseded by a newer state of the
	// object and left alone. The rest of the batch counts as applied.
	Stale []string
	// StaleCount, when Stale is empty, is how many of the batch's changes were stale, for a consumer
	// that learns only the count (a worker's report); the lag then runs from the newest event of all.
	StaleCount int
}

// AckResult is what Ack counted, for the consumer's metrics.
type AckResult struct {
	Applied, Stale int
	// Lag is from the event time of the newest applied change to Published; HasLag is false when no
	// applied change had an event time.
	Lag    time.Duration
	HasLag bool
}

// Stats are one Dataset's event counters, for its status and metrics.
type Stats struct {
	// Received counts every change and ignorable record delivered for the Dataset.
	Received int64
	// Applied counts changes published by acknowledged batches (all of an overflow batch).
	Applied int64
	// Ignored counts records outside the Dataset (other bucket, prefix or globs, directory markers)
	// or not about an object write or removal.
	Ignored int64
	// Stale counts changes the consumer found superseded.
	Stale int64
	// Coalesced counts changes dropped because a newer change to the same key was in the same batch.
	Coalesced int64
	// Lost counts reports from a source that events were lost or unreadable.
	Lost int64
	// Unauthorized counts webhook requests refused for a missing or wrong token.
	Unauthorized int64
	// LastEventTime is the newest event time received; LastUnauthorized the last refused request.
	LastEventTime    time.Time
	LastUnauthorized time.Time
	// LastLag is the lag of the last acknowledged batch that had one (see AckResult.Lag), and
	// LastPublished its publish time.
	LastLag       time.Duration
	LastPublished time.Time
	// Pending counts changes waiting for the next batch; InFlight those of the batch being applied.
	Pending, InFlight int
}

// Debouncer gathers changes per Dataset key into batches. One batch per key is in flight at a time:
// the next flushes only after the consumer acknowledged the previous one, so one Dataset never has
// two targeted syncs at once. Safe for concurrent use.
type Debouncer struct {
	cfg  DebounceConfig
	emit func(*Batch)

	mu     sync.Mutex
	sets   map[string]*dataset
	closed bool
}

type dataset struct {
	key      string
	scope    Scope
	stats    Stats
	pending  *pending
	inFlight *Batch
	timer    Timer
	seq      uint64 // identifies the armed timer, so a stopped timer that fires anyway does nothing
	removed  bool
}

type pending struct {
	changes  map[string]Change // by Key; nil once overflowed
	count    int
	first    time.Time
	last     time.Time
	freshAt  time.Time // first fresh change; zero if none
	newest   time.Time // latest EventTime
	overflow string
	acks     []Ack
}

// NewDebouncer returns a Debouncer that hands each batch to emit. emit is called from a timer
// goroutine, never with the Debouncer's lock held; it should hand the batch on quickly (to a work
// queue) and may call Ack or Nack from any goroutine, later or at once.
func NewDebouncer(cfg DebounceConfig, emit func(*Batch)) *Debouncer {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.FreshDelay <= 0 {
		cfg.FreshDelay = DefaultFreshDelay
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	return &Debouncer{cfg: cfg, emit: emit, sets: map[string]*dataset{}}
}

// Configure registers a Dataset key with its scope, or updates the scope. Changes already waiting
// under an older scope turn the pending batch into an overflow: what they mean under the new scope
// is for a listing to say.
func (d *Debouncer) Configure(key string, s Scope) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ds, ok := d.sets[key]
	if !ok {
		d.sets[key] = &dataset{key: key, scope: s}
		return
	}
	if reflect.DeepEqual(ds.scope, s) {
		return
	}
	ds.scope = s
	if ds.pending != nil {
		d.overflowLocked(ds, OverflowScopeChanged)
		d.armLocked(ds)
	}
}

// Remove forgets a Dataset key: its timer stops and what it was waiting for is released (acked
// with false). A batch in flight can still be acknowledged; it then settles its sources but counts
// nowhere.
func (d *Debouncer) Remove(key string) {
	d.mu.Lock()
	ds, ok := d.sets[key]
	var acks []Ack
	if ok {
		delete(d.sets, key)
		ds.removed = true
		d.stopLocked(ds)
		if ds.pending != nil {
			acks = ds.pending.acks
			ds.pending = nil
		}
	}
	d.mu.Unlock()
	settle(acks, false)
}

// Keys returns the configured Dataset keys, sorted: a sweep compares them with the Datasets that
// still exist.
func (d *Debouncer) Keys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]string, 0, len(d.sets))
	for k := range d.sets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Close stops every timer and releases everything pending. Batches in flight can still be
// acknowledged.
func (d *Debouncer) Close() {
	d.mu.Lock()
	d.closed = true
	var acks []Ack
	for key, ds := range d.sets {
		d.stopLocked(ds)
		ds.removed = true
		if ds.pending != nil {
			acks = append(acks, ds.pending.acks...)
		}
		delete(d.sets, key)
	}
	d.mu.Unlock()
	settle(acks, false)
}

// Add delivers one message's changes for a Dataset key, with the source's acknowledgement. It
// returns how many changes the Dataset takes; when it takes none, ack is called with false at once:
// the message is not the Dataset's (another prefix, another bucket, a test event), so the source
// leaves it, and another consumer of the queue still gets it once its visibility timeout ends. Only
// a message that the Dataset takes something from is ever deleted.
func (d *Debouncer) Add(key string, m Message, ack Ack) (int, error) {
	d.mu.Lock()
	ds, ok := d.sets[key]
	if !ok || d.closed {
		d.mu.Unlock()
		return 0, fmt.Errorf("%w %q", ErrUnknownDataset, key)
	}
	now := d.cfg.Clock.Now()
	ds.stats.Received += int64(len(m.Changes) + m.Ignored)
	ds.stats.Ignored += int64(m.Ignored)
	taken := 0
	for _, c := range m.Changes {
		if c.EventTime.After(ds.stats.LastEventTime) {
			ds.stats.LastEventTime = c.EventTime
		}
		rel, ok := ds.scope.Rel(c)
		if !ok {
			ds.stats.Ignored++
			continue
		}
		c.Rel = rel
		taken++
		p := d.pendingLocked(ds, now)
		p.last = now
		if c.EventTime.After(p.newest) {
			p.newest = c.EventTime
		}
		if p.freshAt.IsZero() && ds.scope.IsFresh(rel) {
			p.freshAt = now
		}
		d.putLocked(ds, p, c, true)
	}
	if taken == 0 {
		d.mu.Unlock()
		if ack != nil {
			ack(false)
		}
		return 0, nil
	}
	if ack != nil {
		ds.pending.acks = append(ds.pending.acks, ack)
	}
	d.armLocked(ds)
	d.mu.Unlock()
	return taken, nil
}

// Sink receives what a source reads for one Dataset. A Debouncer's For gives one.
type Sink interface {
	// Deliver hands over one message's changes; ack settles the message later.
	Deliver(m Message, ack Ack) error
	// Lost reports a message that could not be read; ack settles it with the batch that replaces it.
	Lost(ack Ack) error
}

// For returns the Sink of one Dataset key.
func (d *Debouncer) For(key string) Sink { return keySink{d: d, key: key} }

type keySink struct {
	d   *Debouncer
	key string
}

func (s keySink) Deliver(m Message, ack Ack) error {
	_, err := s.d.Add(s.key, m, ack)
	return err
}

func (s keySink) Lost(ack Ack) error { return s.d.Lost(s.key, ack) }

// Lost records that a source lost events for a Dataset key (a message it could not read, a body it
// refused): the pending batch becomes an overflow, so the consumer runs a full listing sync. ack,
// if not nil, is settled with the batch. The source logs why.
func (d *Debouncer) Lost(key string, ack Ack) error {
	d.mu.Lock()
	ds, ok := d.sets[key]
	if !ok || d.closed {
		d.mu.Unlock()
		return fmt.Errorf("%w %q", ErrUnknownDataset, key)
	}
	ds.stats.Lost++
	p := d.pendingLocked(ds, d.cfg.Clock.Now())
	if ack != nil {
		p.acks = append(p.acks, ack)
	}
	d.overflowLocked(ds, OverflowEventsLost)
	d.armLocked(ds)
	d.mu.Unlock()
	return nil
}

// Unauthorized counts a refused webhook request for a Dataset key (unknown keys are not counted).
func (d *Debouncer) Unauthorized(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ds, ok := d.sets[key]; ok {
		ds.stats.Unauthorized++
		ds.stats.LastUnauthorized = d.cfg.Clock.Now()
	}
}

// Stats returns a Dataset's counters; ok is false for an unknown key.
func (d *Debouncer) Stats(key string) (Stats, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ds, ok := d.sets[key]
	if !ok {
		return Stats{}, false
	}
	s := ds.stats
	if ds.pending != nil {
		s.Pending = ds.pending.count
	}
	if ds.inFlight != nil {
		s.InFlight = ds.inFlight.Count
	}
	return s, true
}

// Ack reports the batch done and settles its sources' acknowledgements with true. Calls after the
// first Ack or Nack do nothing and return a zero result.
func (b *Batch) Ack(o Outcome) AckResult {
	var res AckResult
	b.once.Do(func() { res = b.d.finish(b, &o) })
	return res
}

// Nack reports the batch not done: its changes go back into the Dataset's pending batch (a newer
// change to the same key that arrived meanwhile wins) and flush again after the window, with their
// acknowledgements still held. Call it when the consumer is ready to retry.
func (b *Batch) Nack() {
	b.once.Do(func() { b.d.finish(b, nil) })
}

// finish settles a batch: o is nil for a Nack.
func (d *Debouncer) finish(b *Batch, o *Outcome) AckResult {
	var res AckResult
	d.mu.Lock()
	ds := b.ds
	live := !ds.removed && d.sets[ds.key] == ds
	if ds.inFlight == b {
		ds.inFlight = nil
	}
	if o == nil {
		if !live {
			d.mu.Unlock()
			settle(b.acks, false)
			return res
		}
		d.requeueLocked(ds, b)
		d.armLocked(ds)
		d.mu.Unlock()
		return res
	}
	published := o.Published
	if published.IsZero() {
		published = d.cfg.Clock.Now()
	}
	res = b.count(o.Stale, published)
	if len(o.Stale) == 0 && o.StaleCount > 0 && b.Overflow == "" {
		res.Stale = min(o.StaleCount, len(b.Changes))
		res.Applied = len(b.Changes) - res.Stale
		res.HasLag = res.HasLag && res.Applied > 0
	}
	if live {
		ds.stats.Applied += int64(res.Applied)
		ds.stats.Stale += int64(res.Stale)
		if res.HasLag {
			ds.stats.LastLag = res.Lag
			ds.stats.LastPublished = published
		}
		if ds.pending != nil {
			d.armLocked(ds)
		}
	}
	d.mu.Unlock()
	settle(b.acks, true)
	return res
}

// count works out what an acknowledged batch applied.
func (b *Batch) count(stale []string, published time.Time) AckResult {
	var res AckResult
	var newest time.Time
	if b.Overflow != "" {
		res.Applied = b.Count
		newest = b.newest
	} else {
		isStale := make(map[string]bool, len(stale))
		for _, k := range stale {
			isStale[k] = true
		}
		for _, c := range b.Changes {
			if isStale[c.Key] {
				res.Stale++
				continue
			}
			res.Applied++
			if c.EventTime.After(newest) {
				newest = c.EventTime
			}
		}
	}
	if !newest.IsZero() && res.Applied > 0 {
		res.HasLag = true
		res.Lag = max(published.Sub(newest), 0)
	}
	return res
}

// pendingLocked returns the Dataset's pending batch, starting one at now if none waits.
func (d *Debouncer) pendingLocked(ds *dataset, now time.Time) *pending {
	if ds.pending == nil {
		ds.pending = &pending{changes: map[string]Change{}, first: now, last: now}
	}
	return ds.pending
}

// putLocked adds one in-scope change to p; later says whether c arrived after what p holds (true
// for new changes, false for changes of a Nacked batch put back).
func (d *Debouncer) putLocked(ds *dataset, p *pending, c Change, later bool) {
	if p.changes == nil { // overflowed: only the count and the acknowledgements matter now
		p.count++
		return
	}
	if old, ok := p.changes[c.Key]; ok {
		ds.stats.Coalesced++
		if (later && c.supersedes(old)) || (!later && !old.supersedes(c)) {
			p.changes[c.Key] = c
		}
		return
	}
	p.changes[c.Key] = c
	p.count++
	if len(p.changes) > d.cfg.MaxKeys {
		d.overflowLocked(ds, OverflowTooManyKeys)
	}
}

// overflowLocked turns the pending batch into an overflow; a loss outranks the other reasons.
func (d *Debouncer) overflowLocked(ds *dataset, why string) {
	p := ds.pending
	if p.overflow == "" || why == OverflowEventsLost {
		p.overflow = why
	}
	p.changes = nil
}

// requeueLocked puts a Nacked batch's changes and acknowledgements back into the pending batch.
func (d *Debouncer) requeueLocked(ds *dataset, b *Batch) {
	now := d.cfg.Clock.Now()
	p := d.pendingLocked(ds, now)
	p.first, p.last = now, now
	p.acks = append(b.acks, p.acks...)
	if b.newest.After(p.newest) {
		p.newest = b.newest
	}
	if b.Fresh && p.freshAt.IsZero() {
		p.freshAt = now
	}
	if b.Overflow != "" {
		p.count += b.Count
		d.overflowLocked(ds, b.Overflow)
		return
	}
	for _, c := range b.Changes {
		d.putLocked(ds, p, c, false)
	}
}

// deadline is when a pending batch flushes: after the quiet window, capped by the maximum delay and,
// once a fresh change is in, by the fresh delay.
func (d *Debouncer) deadline(ds *dataset, p *pending) time.Time {
	window, maxDelay := d.cfg.Window, d.cfg.MaxDelay
	if ds.scope.Window > 0 {
		window = ds.scope.Window
	}
	if ds.scope.MaxDelay > 0 {
		maxDelay = ds.scope.MaxDelay
	}
	t := p.last.Add(window)
	if limit := p.first.Add(maxDelay); limit.Before(t) {
		t = limit
	}
	if !p.freshAt.IsZero() {
		if limit := p.freshAt.Add(d.cfg.FreshDelay); limit.Before(t) {
			t = limit
		}
	}
	return t
}

// armLocked (re)starts the Dataset's timer for its pending batch's deadline.
func (d *Debouncer) armLocked(ds *dataset) {
	d.stopLocked(ds)
	if ds.pending == nil || ds.inFlight != nil || d.closed {
		return
	}
	ds.seq++
	seq := ds.seq
	wait := d.deadline(ds, ds.pending).Sub(d.cfg.Clock.Now())
	ds.timer = d.cfg.Clock.AfterFunc(wait, func() { d.fire(ds, seq) })
}

func (d *Debouncer) stopLocked(ds *dataset) {
	if ds.timer != nil {
		ds.timer.Stop()
		ds.timer = nil
	}
}

// fire flushes a Dataset's pending batch when its timer is still the armed one.
func (d *Debouncer) fire(ds *dataset, seq uint64) {
	d.mu.Lock()
	if ds.removed || d.closed || seq != ds.seq || ds.pending == nil || ds.inFlight != nil {
		d.mu.Unlock()
		return
	}
	if now := d.cfg.Clock.Now(); now.Before(d.deadline(ds, ds.pending)) {
		d.armLocked(ds)
		d.mu.Unlock()
		return
	}
	ds.timer = nil
	b := d.batchLocked(ds)
	d.mu.Unlock()
	d.emit(b)
}

func (d *Debouncer) batchLocked(ds *dataset) *Batch {
	p := ds.pending
	ds.pending = nil
	b := &Batch{
		Key: ds.key, Overflow: p.overflow, Fresh: !p.freshAt.IsZero(), Count: p.count,
		First: p.first, Last: p.last, newest: p.newest, acks: p.acks, d: d, ds: ds,
	}
	if p.overflow == "" {
		b.Changes = make([]Change, 0, len(p.changes))
		for _, c := range p.changes {
			b.Changes = append(b.Changes, c)
		}
		sort.Slice(b.Changes, func(i, j int) bool { return b.Changes[i].Key < b.Changes[j].Key })
	}
	ds.inFlight = b
	return b
}

func settle(acks []Ack, ok bool) {
	for _, a := range acks {
		a(ok)
	}
}
