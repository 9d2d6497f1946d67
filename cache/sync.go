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

// Package cache is pqcache's sync engine: it mirrors an S3 prefix into a local directory, one file at
// a time, so that unchanged objects cost nothing and a reader never sees a partial or corrupt file.
//
// A sync lists the prefix (paginated ListObjectsV2, no per-object HEAD), merges the listing with the
// manifest (package manifest) in key order (package plan), and downloads what changed while the
// listing goes on (download.go): with at most Parallelism GETs in flight across and within files,
// each conditional on the listed ETag, into staging files on the same filesystem, every piece hashed
// as it arrives and the whole checked against what the store vouches for (package integrity), large
// objects resumable across runs (resume.go). Verified files are published in batches under the
// manifest's write-ahead protocol (publish.go). It imports nothing from Kubernetes: the operator runs
// it in worker pods through `pqcache sync`, and people run the same command on their laptops.
package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/parquetmeta"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Slots is a budget of GETs shared by several syncs; a slot is held for one GET.
type Slots interface {
	Acquire(ctx context.Context) error
	Release()
}

// Store is what the engine needs from an object store; s3store.Store implements it.
type Store interface {
	ListPages(ctx context.Context, prefix, strip string, fn func(s3store.Page) error) error
	Get(ctx context.Context, key, etag string, r s3store.Range) (io.ReadCloser, s3store.GetInfo, error)
	Head(ctx context.Context, key, etag string) (s3store.Checksums, bool, error)
	Describe(ctx context.Context, key, strip string) (plan.Object, bool, error)
}

// VerifyMode says how much a downloaded file is checked before it is published: the worker
// contract's own type (api/wire), so that the mode a Dataset names reaches the engine as it is.
//
// VerifyChecksum checks size, what the store vouches for (its checksum, composite checksum or ETag,
// see package integrity), and Parquet framing and footer. The manifest records the store's
// full-object checksum as the file's hash when the object has one (S3's default CRC64NVME), and
// SHA-256 otherwise: one hash per byte either way. VerifySHA256 checks what VerifyChecksum does, and
// records SHA-256 of every file in the manifest even when the store's checksum could serve: for users
// who compare files with SHA-256s of their own; it costs a second hash of every byte the store
// vouches for with a checksum. VerifySize checks size and Parquet framing and footer only.
type VerifyMode = wire.VerifyMode

// The verify modes.
const (
	VerifyChecksum = wire.VerifyChecksum
	VerifySHA256   = wire.VerifySHA256
	VerifySize     = wire.VerifySize
)

// Options configure one sync.
type Options struct {
	// Dir is the cache root.
	Dir string
	// Source identifies where the data comes from (endpoint, bucket, prefix); when it differs from
	// the one the manifest recorded, every file is copied again.
	Source string
	// Prefix is the source key prefix; local paths are keys relative to it.
	Prefix string
	// SubPrefixes, relative to Prefix, limit the sync to parts of the tree (pqcache stage); empty
	// syncs everything.
	SubPrefixes []string
	// Include and Exclude are globs over relative keys.
	Include, Exclude []string
	// AmbientRefused says the store is read anonymously because the Dataset names no credentials and
	// may not use this process's own identity: a refusal by the store then gives
	// wire.ReasonAmbientCredentialsNotAllowed, whose message says which setting would allow it.
	AmbientRefused bool
	// Parallelism bounds concurrent GETs, across and within files.
	Parallelism int
	// Slots, if set, is a budget this sync shares with others (a node agent's, across its Datasets):
	// each GET also holds one of its slots while its bytes move, and none is held while the sync
	// lists, plans or publishes.
	Slots Slots
	// MaxBytes, if set, caps the size of the generation the sync makes (every file it keeps, copied
	// or unchanged): a sync whose generation would be larger starts no copy past the cap, commits
	// nothing and fails with ErrOverByteCap; the last committed generation stands.
	MaxBytes *int64
	// Reserve is free space on the volume that the sync never takes: one that would leave less free
	// fails with ErrNodeReserve before it copies past that point.
	Reserve int64
	// PartSize is the size of one ranged GET.
	PartSize int64
	// Verify is how much to check before publishing.
	Verify VerifyMode
	// Prune deletes files whose objects are gone.
	Prune bool
	// Ephemeral skips durability (no syncfs, no fsync of the manifest) for a scratch volume whose
	// contents die with the pod, such as the one a BenchRun stages fresh partitions into: a crash
	// loses the volume anyway. Publishing stays atomic for readers.
	Ephemeral bool
	// PageCache writes large files through the page cache too, instead of with direct I/O (see
	// directAbove): for a reader on the same node that reads the files right after the sync and wants
	// them in memory, or a filesystem whose direct I/O is slow.
	PageCache bool
	// DryRun plans and reports without changing anything; OnPlan sees each action.
	DryRun bool
	OnPlan func(plan.Action)
	// Deadline bounds the sync's time; zero fields take the defaults (docs/sync.md, "Deadlines").
	Deadline Deadline
	// Progress, if set, is called every ProgressInterval while the sync runs, and once at the end.
	Progress         func(wire.SyncProgress)
	ProgressInterval time.Duration
	// Log receives structured logs; nil discards them.
	Log *slog.Logger
	// Requests, if set, is read for the report's request counts.
	Requests *s3store.Requests
	// Changes, if set, makes this a targeted sync (targeted.go): instead of listing the prefix, it
	// checks just these keys against the bucket, one HEAD each, and copies or deletes what differs.
	Changes *wire.ChangeSet
	// Generations, if set, also publishes the manifest's generation as a whole tree that readers can
	// hold while later syncs change the stable path (package generations), and removes the old trees
	// this policy does not keep. Nil publishes the stable path only (pqcache stage, scratch volumes).
	Generations *generations.Policy
	// Follow, if set, makes this sync a follower's copy of another directory's generation, read from a
	// peer that serves it (see Follow); the store Sync is given, at Prefix, is then the fallback.
	Follow *Follow
	// Table, if set (wire.TableDelta), says Prefix is a table's root: a sync copies exactly the files
	// of its newest committed version (table.go), publishes nothing when any of them is missing or
	// fails, and always lists (a change set cannot stand for a commit). A follower copies its seed's
	// generation, which is one version already, and ignores it.
	Table string
	// GenerationAtLeast makes the next generation this sync commits higher than it: a seed whose disk
	// was wiped must not number its generations like those its followers already hold.
	GenerationAtLeast int64
}

// SourceID names where the data comes from, for Options.Source: a change re-copies everything. It
// keeps an endpoint's scheme and host only, never credentials someone put in the URL. Every writer of
// one directory (pqcache sync, a node agent, its followers) must name a source alike.
func SourceID(endpoint, bucket, prefix string) string {
	id := "s3://" + bucket + "/" + prefix
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err == nil {
			id += " at " + u.Scheme + "://" + u.Host
		}
	}
	return id
}

// Source is a store and the key prefix that Options.Prefix stands for there.
type Source struct {
	Store  Store
	Prefix string
}

// Follow is a follower's source: a peer serving one generation of the seed's copy. The listing is
// that generation's, so an object that changed is never replanned against a newer state; the manifest
// commits as exactly this generation, and its tree is published only when every file was copied. A
// follower never publishes a generation that differs from the seed's: a failed sync leaves current
// where it was, and the next one resumes. A file the peer could not serve, or served with bytes that
// failed verification, is fetched once more from the bucket (the store Sync is given, at
// Options.Prefix), with the same ETag condition; the report counts these files.
type Follow struct {
	// Peer is the peer's store and the key prefix the generation's files are under there.
	Peer Source
	// Generation is the seed's generation this copy becomes (> 0).
	Generation int64
}

// Defaults.
const (
	DefaultParallelism  = 8
	DefaultPartSize     = 16 << 20
	maxReportedFailures = 20
)

// ErrFilesFailed is returned when the sync finished but some files could not be copied; the report
// lists them.
var ErrFilesFailed = errors.New("some files failed")

// ErrInsufficientCapacity is returned when the planned copies need more room than the volume has.
var ErrInsufficientCapacity = errors.New("insufficient capacity")

type syncer struct {
	// store and prefix are where the files are read: the bucket at Options.Prefix, or a follower's
	// peer; fallback is the bucket when it is not the store, and follows the generation a follower
	// copies (0: none).
	store    Store
	prefix   string
	fallback *Source
	follows  int64
	opts     Options
	log      *slog.Logger
	m        *manifest.Manifest
	rep      *wire.SyncReport
	root     string
	// slots bounds the GETs in flight across the whole sync (download.go).
	slots chan struct{}
	// resume keeps large downloads resumable across runs.
	resume *resumer
	// room holds copies back past the volume's free space, its reserve and the byte cap (feed).
	room *room

	abort    context.CancelCauseFunc // stops the whole sync
	deadline *deadline
	mu       sync.Mutex // guards rep.Failed, rep's counters updated by workers, classes
	classes  map[string]int64
	progress progressCounters
	// listing is false for a targeted sync that applies its change set instead of listing.
	listing bool
	// highestTree is the newest generation tree on the volume when the sync began (prepare).
	highestTree int64
	// applied and failedKeys track a targeted sync's changes: the event time of each key it settled
	// (written by the planner alone, read once the workers are done), and the keys whose copy or
	// delete failed (written by fail, under mu).
	applied    map[string]time.Time
	failedKeys map[string]bool
	// partsIgnored is set when the store answers part reads with the whole object (storefacts.go):
	// from an earlier sync of the source, or learnt by this one.
	partsIgnored atomic.Bool
	// answered is set once the store has answered a listing (or a targeted sync's first HEAD): until
	// then, a failed sync has learnt nothing, and leaves the target as it found it (leaveAsFound).
	answered atomic.Bool
	// table is the version a sync of a table copies (nil for a prefix, and for a follower).
	table *tableFiles
}

// Sync runs one sync from store (the bucket, whose keys under opts.Prefix are the files; with
// opts.Follow, the fallback of a follower that reads its peer) and returns its report. A non-nil
// error means the sync did not publish everything it planned; what it did publish is complete and in
// the manifest.
func Sync(ctx context.Context, store Store, opts Options) (*wire.SyncReport, error) {
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism
	}
	if opts.PartSize <= 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.Verify == "" {
		opts.Verify = VerifyChecksum
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &syncer{store: store, prefix: opts.Prefix, opts: opts, log: log, root: filepath.Clean(opts.Dir), classes: map[string]int64{},
		rep: &wire.SyncReport{Source: opts.Source, Start: time.Now().UTC(), DryRun: opts.DryRun}}
	if f := opts.Follow; f != nil {
		s.fallback = &Source{Store: store, Prefix: opts.Prefix}
		s.store, s.prefix, s.follows = f.Peer.Store, f.Peer.Prefix, f.Generation
	}
	found := targetState(s.root)
	runErr := s.run(ctx)
	if runErr != nil && !s.answered.Load() {
		found.restore(s.root, log)
	}
	err := s.finishReport(runErr)
	if s.opts.Progress != nil {
		s.opts.Progress(s.progress.snapshot(s.rep.Start))
	}
	return s.rep, err
}

// run syncs with the manifest open for writing; closing it is part of the sync, so its error is
// returned unless an earlier one is.
func (s *syncer) run(ctx context.Context) (err error) {
	filter, err := plan.NewFilter(s.opts.Include, s.opts.Exclude)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", s.root, err)
	}
	if s.opts.DryRun {
		if s.opts.Changes != nil {
			return errors.New("a targeted sync (a change set) cannot be a dry run")
		}
		return s.dryRun(ctx, filter)
	}
	if s.m, err = manifest.OpenWith(s.root, manifest.OpenOptions{NoSync: s.opts.Ephemeral}); err != nil {
		return err
	}
	defer func() {
		if cerr := s.m.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the manifest: %w", cerr)
		}
	}()
	force, err := s.prepare()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.abort = cancel
	s.startListDeadline()
	defer s.deadline.stop()
	stopProgress := s.startProgress(ctx)
	defer stopProgress()
	if s.opts.Table != "" && s.follows == 0 {
		if s.table, err = s.readTable(ctx); err != nil {
			return deadlineOr(context.Cause(ctx), err)
		}
		s.rep.Table = s.table.report()
	}
	if err := s.transfer(ctx, filter, force); err != nil {
		return deadlineOr(context.Cause(ctx), err)
	}
	if s.table != nil {
		if err := s.table.complete(); err != nil {
			return err
		}
		if s.rep.FilesFailed > 0 {
			// A generation without one of the version's files is no version at all.
			first := s.rep.Failed[0] // the workers are done: no lock
			return fmt.Errorf("%w: %d of version %d's files were not copied, first %s: %s", ErrFilesFailed, s.rep.FilesFailed, s.table.snapshot.Version, first.Key, first.Error)
		}
	}
	defer func() { s.log.Debug("Committed", "elapsed", time.Since(s.rep.Start)) }()
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if err := s.resume.sweep(s.opts.SubPrefixes); err != nil {
		s.log.Warn("Could not remove abandoned partial downloads", "error", err)
	}
	if err := s.commit(force != ""); err != nil {
		return err
	}
	// Readers of the current generation see the changes once it is published: the lag ends there.
	err = s.publishGeneration(ctx)
	s.settleChanges()
	return deadlineOr(context.Cause(ctx), err)
}

// prepare opens what a sync resumes from and decides how it runs: whether every file must be copied
// again (the source changed), and whether it lists the prefix or applies its change set.
func (s *syncer) prepare() (plan.Change, error) {
	var err error
	if s.resume, err = openResumer(s.root); err != nil {
		return "", err
	}
	// Generation numbers are never used twice on a volume, even by a manifest that begins again.
	if s.highestTree, err = generations.Highest(s.root); err != nil {
		return "", err
	}
	if err := s.m.GenerationAtLeast(max(s.highestTree, s.opts.GenerationAtLeast)); err != nil {
		return "", err
	}
	force := plan.Change("")
	prev, err := s.m.Source()
	if err != nil {
		return "", err
	}
	if prev != "" && prev != s.opts.Source {
		s.log.Info("Source changed: copying every file again", "was", prev, "now", s.opts.Source)
		force = plan.ChangeSource
	}
	if loadStoreFacts(s.root, s.opts.Source).IgnoresPartNumber {
		s.partsIgnored.Store(true)
		s.warn(partsIgnoredWarning)
	}
	s.listing = s.opts.Changes == nil || s.opts.Table != ""
	if !s.listing && (force != "" || prev == "") {
		// A change set cannot stand for the data set when the source changed, or when nothing was
		// ever listed into this directory: it would publish just its keys as if they were all.
		s.log.Info("Listing the whole prefix instead of the change set", "sourceChanged", force != "", "neverSynced", prev == "")
		s.listing = true
	}
	return force, nil
}

// transfer plans the copies and deletes, runs the copies on Parallelism workers and publishes each
// file as it is verified; it returns once every file is published or abandoned. A planning error
// cancels the copies in flight.
func (s *syncer) transfer(ctx context.Context, filter *plan.Filter, force plan.Change) error {
	s.slots = make(chan struct{}, s.opts.Parallelism)
	copies := make(chan plan.Action, s.opts.Parallelism)
	events := make(chan event, s.opts.Parallelism)
	var workers sync.WaitGroup
	for w := range s.opts.Parallelism {
		// Each worker stages into its own directory: creating files in one directory shared by all
		// workers serialises them on its lock (a third of a small-file sync's time went there).
		shard := filepath.Join(manifest.StagingDir, strconv.Itoa(w))
		if err := os.MkdirAll(filepath.Join(s.root, shard), 0o755); err != nil {
			close(copies)
			workers.Wait()
			return fmt.Errorf("creating %s: %w", shard, err)
		}
		workers.Go(func() {
			for a := range copies {
				s.copyFileRecovered(ctx, shard, a, events)
			}
		})
	}
	pubErr := make(chan error, 1)
	go func() {
		err := recovered("publishing", func() error { return s.publish(events, &renamePublisher{s: s}) })
		if errors.Is(err, s3store.ErrPanicked) {
			// The publishing loop itself died: stop the workers, and take what they still send.
			s.abort(err)
			for ev := range events {
				s.drop(ev)
			}
		}
		pubErr <- err
	}()

	planErr := s.feed(ctx, filter, force, events, copies)
	if planErr != nil {
		s.abort(planErr)
	}
	s.progress.listed.Store(true)
	s.log.Debug("Listed", "elapsed", time.Since(s.rep.Start), "listed", s.rep.FilesListed)
	close(copies)
	workers.Wait()
	s.log.Debug("Downloaded", "elapsed", time.Since(s.rep.Start))
	close(events)
	if err := <-pubErr; err != nil {
		return err
	}
	s.log.Debug("Published", "elapsed", time.Since(s.rep.Start))
	return planErr
}

// copyFileRecovered is copyFile, with a panic in it (a bug that this store's answers reach) turned
// into the end of this sync with s3store.ErrPanicked: it would otherwise end the process, and a node
// agent runs every Dataset's syncs in one. The published files stay as they were.
func (s *syncer) copyFileRecovered(ctx context.Context, shard string, a plan.Action, events chan<- event) {
	defer func() {
		if p := recover(); p != nil {
			s.abort(fmt.Errorf("copying %s: %w: %v\n%s", a.Object.Key, s3store.ErrPanicked, p, debug.Stack()))
		}
	}()
	s.copyFile(ctx, shard, a, events)
}

// publishGeneration makes the committed generation whole for readers (package generations): a tree
// of hard links to exactly the files the manifest lists, switched to atomically. An unchanged sync
// finds the tree there and only applies the keep policy.
func (s *syncer) publishGeneration(ctx context.Context) error {
	g := s.rep.Manifest.Generation
	if s.opts.Generations == nil {
		if len(s.opts.SubPrefixes) == 0 {
			// Generations are off: a volume that had them loses them, or current would name a
			// generation that no longer moves.
			if err := generations.Retire(ctx, s.root); err != nil {
				s.log.Warn("Could not remove the generations of a volume that no longer keeps them", "error", err)
			}
		}
		return nil
	}
	if g == 0 {
		return nil
	}
	if s.follows > 0 && s.rep.FilesFailed > 0 {
		s.log.Info("Not publishing the generation: some of its files are missing here", "generation", g, "failed", s.rep.FilesFailed)
		return nil
	}
	p := *s.opts.Generations
	p.Durable = !s.opts.Ephemeral
	p.Source = s.opts.Source
	entries := func(fn func(manifest.Entry) error) error { return s.m.Scan("", fn) }
	sum, err := generations.Publish(ctx, s.root, g, entries, p, time.Now())
	if sum.Current == g {
		s.rep.Generations = &sum
	}
	switch {
	case err == nil:
		return nil
	case sum.Current == g:
		// Only removing old generations failed: readers have the new one; the next sync tries again.
		s.log.Warn("Could not remove old generations", "error", err)
		return nil
	default:
		var missing *generations.MissingError
		if errors.As(err, &missing) {
			return s.forgetMissing(g, err)
		}
		return fmt.Errorf("publishing generation %d for readers: %w", g, err)
	}
}

// forgetMissing handles a generation that could not be built because published files are gone from
// the volume (removed by hand, or lost): it drops them from the manifest, so that the next sync
// copies them again instead of failing on them forever, and reports the sync failed.
func (s *syncer) forgetMissing(g int64, cause error) error {
	var gone []string
	err := s.m.Scan("", func(e manifest.Entry) error {
		if _, err := os.Lstat(manifest.LocalPath(s.root, e.Key)); errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, e.Key)
		}
		return nil
	})
	if err == nil && len(gone) > 0 {
		err = s.m.Resolve(nil, gone, nil)
	}
	if err != nil {
		return fmt.Errorf("publishing generation %d for readers: %w (and forgetting the missing files: %w)", g, cause, err)
	}
	return fmt.Errorf("publishing generation %d for readers: %d published files were missing from the volume (the first: %w); they are out of the manifest now, and the next sync copies them again", g, len(gone), cause)
}

// feed plans the sync and hands the work out while the listing goes on: deletes to the publisher,
// copies to the workers. It never starts a copy that the volume, with its reserve, has no room for,
// nor one past the byte cap (room): past that, it lists to the end to tell how much room the whole
// sync needs, and refuses.
func (s *syncer) feed(ctx context.Context, filter *plan.Filter, force plan.Change, events chan<- event, copies chan<- plan.Action) error {
	r, err := s.newRoom()
	if err != nil {
		return err
	}
	s.room = r
	planner := func(emit func(plan.Action) error) error { return s.plan(ctx, filter, force, emit) }
	if !s.listing {
		planner = func(emit func(plan.Action) error) error { return s.planChanges(ctx, filter, emit) }
	}
	// A listing's deletes wait for its end: a key missing so far from a listing that then fails (a
	// page the store breaks, a deadline) may be on the page that never came, and pruning it would
	// take it from the copy that readers use. A change set names its deletes: they go at once.
	var held []manifest.Entry
	err = planner(func(a plan.Action) error {
		if !a.Copy {
			r.deleted(a.Old)
			if s.listing {
				held = append(held, *a.Old)
				return nil
			}
			return s.sendDelete(ctx, events, *a.Old)
		}
		s.progress.filesTotal.Add(1)
		s.progress.bytesTotal.Add(a.Object.Size)
		if start, err := r.copy(a); err != nil || !start {
			return err
		}
		select {
		case copies <- a:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	if err != nil {
		return err
	}
	s.progress.listed.Store(true)
	s.startTransferDeadline(r.need)
	space, err := r.verdict()
	if space != nil {
		s.rep.Space = space
	}
	if err != nil {
		return err // refused: the held deletes stay undone with the rest
	}
	for _, old := range held {
		if err := s.sendDelete(ctx, events, old); err != nil {
			return err
		}
	}
	return nil
}

// newRoom is the room of this sync; a targeted sync's generation starts from the manifest's size.
func (s *syncer) newRoom() (*room, error) {
	r := &room{root: s.root, maxBytes: s.opts.MaxBytes, reserve: max(s.opts.Reserve, 0), delta: !s.listing}
	if r.delta && r.maxBytes != nil {
		sum, _, ok, err := s.m.Cached()
		if err == nil && !ok {
			sum, err = s.m.Summary(nil)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the size of the published files: %w", err)
		}
		r.gen = sum.Bytes
	}
	return r, nil
}

// sendDelete hands the publisher a delete.
func (s *syncer) sendDelete(ctx context.Context, events chan<- event, old manifest.Entry) error {
	select {
	case events <- event{del: true, entry: old}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// plan lists each sub-prefix and merges it with the manifest's entries under the same sub-prefix.
func (s *syncer) plan(ctx context.Context, filter *plan.Filter, force plan.Change, emit func(plan.Action) error) error {
	subs := s.opts.SubPrefixes
	if len(subs) == 0 {
		subs = []string{""}
	}
	// Keys that differ only by case are found across the sub-prefixes when these list in one ascending
	// order (FoldTracker needs it), else within each.
	var folds plan.FoldTracker
	shared := sortedDisjoint(subs)
	for _, sub := range subs {
		if !shared {
			folds = plan.FoldTracker{}
		}
		var next func() (manifest.Entry, bool, error)
		if s.m != nil {
			next = s.m.Iterate(sub).Next
		} else {
			next = func() (manifest.Entry, bool, error) { return manifest.Entry{}, false, nil }
		}
		merge := &plan.Merge{
			Next: next,
			Emit: emit,
			Unchanged: func(e manifest.Entry) {
				s.rep.FilesUnchanged++
				if s.room != nil {
					s.room.kept(e.Size)
				}
			},
			Prune:     s.opts.Prune,
			ForceCopy: force,
		}
		var conflicts plan.ConflictTracker
		err := s.store.ListPages(ctx, s.prefix+sub, s.prefix, func(page s3store.Page) error {
			s.answered.Store(true)
			for _, r := range page.Refused {
				// A key outside the prefix or a negative size: refused as keys that cannot be files are.
				s.rep.FilesListed++
				s.fail(r.Key, wire.ReasonHostileKeys, r.Err)
			}
			for _, obj := range page.Objects {
				s.rep.FilesListed++
				if !filter.Match(obj.Key) || s.table != nil && !s.table.wants(s, obj) {
					continue
				}
				if strings.HasSuffix(obj.Key, "/") && obj.Size == 0 {
					continue // a "directory marker" some tools write: nothing to publish
				}
				if err := plan.ValidateKey(obj.Key); err != nil {
					s.fail(obj.Key, wire.ReasonHostileKeys, err)
					continue
				}
				if dir := conflicts.Add(obj.Key); dir != "" {
					s.fail(obj.Key, wire.ReasonHostileKeys, fmt.Errorf("%w %q: %q is also an object, and a path cannot be both a file and a directory", plan.ErrHostileKey, obj.Key, dir))
					continue
				}
				if folds.Add(obj.Key) {
					s.fail(obj.Key, wire.ReasonHostileKeys, fmt.Errorf("%w %q: an earlier key differs from it only by case, and the two collide on case-insensitive file systems", plan.ErrHostileKey, obj.Key))
					continue
				}
				if err := merge.Listed(obj); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := merge.Finish(); err != nil {
			return err
		}
	}
	return nil
}

// sortedDisjoint tells whether prefixes list their keys in one ascending order: sorted, and none a
// prefix of the next (of a sorted list, the only ones that could hold it).
func sortedDisjoint(prefixes []string) bool {
	for i := 1; i < len(prefixes); i++ {
		if prefixes[i] <= prefixes[i-1] || strings.HasPrefix(prefixes[i], prefixes[i-1]) {
			return false
		}
	}
	return true
}

func (s *syncer) dryRun(ctx context.Context, filter *plan.Filter) error {
	if _, err := os.Stat(manifest.Path(s.root)); err == nil {
		if s.m, err = manifest.OpenReadOnly(s.root); err != nil {
			return err
		}
		defer func() { _ = s.m.Close() }() // opened read-only: nothing to lose
	}
	force := plan.Change("")
	if s.m != nil {
		if prev, err := s.m.Source(); err == nil && prev != "" && prev != s.opts.Source {
			force = plan.ChangeSource
		}
	}
	if s.opts.Table != "" {
		var err error
		if s.table, err = s.readTable(ctx); err != nil {
			return err
		}
		s.rep.Table = s.table.report()
	}
	return s.plan(ctx, filter, force, func(a plan.Action) error {
		if a.Copy {
			s.rep.Plan.Copies++
			s.rep.Plan.CopyBytes += a.Object.Size
		} else {
			s.rep.Plan.Deletes++
		}
		if s.opts.OnPlan != nil {
			s.opts.OnPlan(a)
		}
		return nil
	})
}

// commit bumps the manifest generation when the sync changed anything, and fills the report's
// manifest and layout summaries. An unchanged sync reuses the summaries the last commit stored, so
// that it costs the listing and nothing that grows with the manifest.
func (s *syncer) commit(sourceChanged bool) error {
	changed := s.rep.FilesCopied+s.rep.FilesDeleted > 0 || sourceChanged
	if s.follows > 0 {
		var err error
		if changed, err = s.followGeneration(changed); err != nil {
			return err
		}
	}
	if !changed {
		sum, extra, ok, err := s.m.Cached()
		if err != nil {
			return err
		}
		if ok && json.Unmarshal(extra, &s.rep.Layout) == nil {
			s.rep.Manifest = sum
			return nil
		}
	}
	var layout parquetmeta.Summary
	visit := func(e manifest.Entry) { layout.Add(e.Size, e.Parquet) }
	layoutJSON := func() []byte {
		s.rep.Layout = wire.Layout{
			ParquetFiles: layout.ParquetFiles, RowGroups: layout.RowGroups,
			MinRowsPerGroup: layout.MinRowsPerGroup, MaxRowsPerGroup: layout.MaxRowsPerGroup,
			Advice: layout.Advice(),
		}
		b, _ := json.Marshal(s.rep.Layout)
		return b
	}
	var (
		sum wire.ManifestSummary
		err error
	)
	if !changed {
		// Nothing changed in this run, but the stored summary is missing (an older manifest) or stale
		// (a run that published files was killed before its commit): a changed manifest still gets
		// a new generation; a merely older one does not.
		dirty, gen, err := s.m.State()
		if err != nil {
			return err
		}
		if !dirty && gen > 0 {
			if sum, err = s.m.Remember(visit, layoutJSON); err != nil {
				return err
			}
			s.rep.Manifest = sum
			return nil
		}
	}
	if sum, err = s.m.Commit(s.opts.Source, visit, layoutJSON); err != nil {
		return err
	}
	s.rep.Manifest = sum
	return nil
}

// followGeneration makes the next Commit number the manifest as the generation a follower copies. It
// says whether a Commit is needed: when files changed, and also when none did but the seed committed
// a generation whose files this copy already had.
func (s *syncer) followGeneration(changed bool) (bool, error) {
	g := s.follows
	if s.highestTree > g {
		// Tree g may exist here with other contents, and Publish would take it as built.
		return false, fmt.Errorf("copying generation %d: this directory already published generation %d; a seed that starts its numbering again must start above its followers' highest generation", g, s.highestTree)
	}
	dirty, cur, err := s.m.State()
	if err != nil {
		return false, err
	}
	if !changed && !dirty && cur == g {
		return false, nil
	}
	return true, s.m.SetGeneration(g - 1)
}

// fail records a file that could not be copied; the sync goes on with the others.
func (s *syncer) fail(key, class string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rep.FilesFailed++
	s.classes[class]++
	if s.failedKeys != nil {
		s.failedKeys[key] = true
	}
	if len(s.rep.Failed) < maxReportedFailures {
		s.rep.Failed = append(s.rep.Failed, wire.FileError{Key: key, Error: err.Error()})
	}
	s.log.Warn("File not copied", "key", key, "error", err)
}

// finishReport fills the report's totals and outcome and returns the sync's error: err, or
// ErrFilesFailed when the sync ran to the end but some files were not copied.
func (s *syncer) finishReport(err error) error {
	r := s.rep
	r.End = time.Now().UTC()
	r.DurationMillis = r.End.Sub(r.Start).Milliseconds()
	if r.DurationMillis > 0 {
		r.BytesPerSecond = r.BytesCopied * 1000 / r.DurationMillis
	}
	if s.opts.Requests != nil {
		r.Requests = wire.RequestCounts{List: s.opts.Requests.List.Load(), Get: s.opts.Requests.Get.Load(), Head: s.opts.Requests.Head.Load()}
	}
	if err == nil && r.FilesFailed > 0 {
		err = fmt.Errorf("%w: %d of the planned files", ErrFilesFailed, r.FilesFailed)
	}
	if err == nil {
		r.Result = wire.ResultSucceeded
		return nil
	}
	r.Result = wire.ResultFailed
	r.Message = wire.Truncate(err.Error(), 1024)
	r.Reason = s.reason(err)
	if s.opts.AmbientRefused && (r.Reason == wire.ReasonAccessDenied || r.Reason == wire.ReasonInvalidCredentials) {
		r.Reason = wire.ReasonAmbientCredentialsNotAllowed
		r.Message = wire.Truncate(wire.AmbientCredentialsMessage+": "+err.Error(), 1024)
	}
	return err
}
