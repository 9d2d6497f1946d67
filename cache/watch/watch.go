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

// Package watch is continuous refresh of one directory without Kubernetes: the operator's event path
// (package notify's sources and debouncer, targeted syncs, a listing sync as the safety net) run by
// one process. `pqcache watch` wires it to flags; `pqcache-testkit lag` measures what it gives.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/notify"
	"github.com/pqcache/pqcache/cache/s3store"
)

// Key is the debouncer's key for the one directory a watch keeps: the webhook's path is /events/<Key>.
const Key = "local/watch"

// DefaultWindow and DefaultMaxDelay bound a batch unless told otherwise: the operator's event path's.
const (
	DefaultWindow   = notify.DefaultWindow
	DefaultMaxDelay = notify.DefaultMaxDelay
)

// Config is what a watch listens to and how often it lists.
type Config struct {
	// Bucket and Prefix are the source; Include and Exclude the globs over its relative keys, as the
	// sync's options have them.
	Bucket, Prefix   string
	Include, Exclude []string
	// WebhookListen serves the event webhook on this address, with WebhookToken the token a store
	// must present.
	WebhookListen, WebhookToken string
	// WebhookQueryToken also takes the token from the query string (notify.WebhookConfig.QueryToken).
	WebhookQueryToken bool
	// SQSQueue is long-polled for the bucket's notifications, at SQSEndpoint in SQSRegion.
	SQSQueue, SQSEndpoint, SQSRegion string
	// Fresh are prefixes, relative to Prefix, whose changes go first.
	Fresh []string
	// Resync is how often the whole prefix is listed (0: never); Window and MaxDelay bound a batch.
	Resync, Window, MaxDelay time.Duration
	// NoInitial skips the listing sync at start.
	NoInitial bool
}

// Line is what a watch prints for each sync: one JSON line.
type Line struct {
	Time    time.Time `json:"time"`
	Trigger string    `json:"trigger"` // initial, events, overflow, resync
	// Keys is how many changes the batch held (events), or how many an overflow stood for.
	Keys           int                 `json:"keys,omitempty"`
	Result         string              `json:"result"`
	Message        string              `json:"message,omitempty"`
	Copied         int64               `json:"copied"`
	Deleted        int64               `json:"deleted"`
	Requests       wire.RequestCounts  `json:"requests"`
	DurationMillis int64               `json:"durationMillis"`
	Changes        *wire.ChangeOutcome `json:"changes,omitempty"`
	// LagMillis is from the oldest applied change's event time to the publication: the batch's worst.
	LagMillis  int64 `json:"lagMillis,omitempty"`
	Generation int64 `json:"generation"`
}

// Run syncs opts' directory from store once (unless cfg.NoInitial), then applies the batches of
// changes the event sources announce and lists again every cfg.Resync, printing a Line per sync on
// out, until ctx ends.
func Run(ctx context.Context, store *s3store.Store, opts cache.Options, cfg Config, out io.Writer) error {
	log := opts.Log
	scope, err := notify.NewScope(cfg.Bucket, cfg.Prefix, cfg.Include, cfg.Exclude, cfg.Fresh)
	if err != nil {
		return err
	}
	batches := make(chan *notify.Batch, 1)
	deb := notify.NewDebouncer(notify.DebounceConfig{Window: cfg.Window, MaxDelay: cfg.MaxDelay}, func(b *notify.Batch) {
		select {
		case batches <- b:
		case <-ctx.Done():
			b.Nack()
		}
	})
	defer deb.Close()
	deb.Configure(Key, scope)

	sources, err := startSources(ctx, cfg, deb, log)
	if err != nil {
		return err
	}
	defer sources.wait()

	ws := &syncer{ctx: ctx, store: store, opts: opts, out: json.NewEncoder(out)}
	if !cfg.NoInitial {
		if _, err := ws.sync("initial", 0, nil); err != nil && ctx.Err() == nil {
			log.Warn("Initial sync failed; the next resync or batch tries again", "error", err)
		}
	}
	var resync <-chan time.Time
	if cfg.Resync > 0 {
		t := time.NewTicker(cfg.Resync)
		defer t.Stop()
		resync = t.C
	}
	for {
		select {
		case <-ctx.Done():
			// A batch not yet applied is left unsettled: its SQS messages come back after their
			// visibility timeout; webhook changes are lost, and the next watch's listing finds them.
			return nil
		case <-resync:
			if _, err := ws.sync("resync", 0, nil); err != nil && ctx.Err() == nil {
				log.Warn("Resync failed", "error", err)
			}
		case b := <-batches:
			applyBatch(ctx, b, ws.sync, log)
		}
	}
}

// syncer runs watch's syncs, each printed as one JSON line with the requests it made.
type syncer struct {
	ctx      context.Context
	store    *s3store.Store
	opts     cache.Options
	out      *json.Encoder
	lastReqs wire.RequestCounts
}

// sync runs a listing sync (changes nil) or applies a change set of keys changes.
func (ws *syncer) sync(trigger string, keys int, changes *wire.ChangeSet) (*wire.SyncReport, error) {
	o := ws.opts
	o.Changes = changes
	rep, err := cache.Sync(ws.ctx, ws.store, o)
	line := Line{Time: time.Now().UTC(), Trigger: trigger, Keys: keys, Result: rep.Result, Message: rep.Message,
		Copied: rep.FilesCopied, Deleted: rep.FilesDeleted, DurationMillis: rep.DurationMillis, Changes: rep.Changes,
		Generation: rep.Manifest.Generation}
	total := countRequests(ws.store.Requests())
	line.Requests = wire.RequestCounts{List: total.List - ws.lastReqs.List, Get: total.Get - ws.lastReqs.Get, Head: total.Head - ws.lastReqs.Head}
	ws.lastReqs = total
	if c := rep.Changes; c != nil && !c.OldestEventTime.IsZero() {
		line.LagMillis = c.PublishedAt.Sub(c.OldestEventTime).Milliseconds()
	}
	_ = ws.out.Encode(line)
	return rep, err
}

// applyBatch runs the sync a batch asks for and settles it: acknowledged once published (the SQS
// messages are then deleted), or handed back to be applied again after a failure.
func applyBatch(ctx context.Context, b *notify.Batch, sync func(string, int, *wire.ChangeSet) (*wire.SyncReport, error), log *slog.Logger) {
	var (
		rep *wire.SyncReport
		err error
	)
	if b.Overflow != "" {
		rep, err = sync("overflow", b.Count, nil)
	} else {
		cs := &wire.ChangeSet{}
		for _, c := range b.Changes {
			cs.Changes = append(cs.Changes, wire.Change{Key: c.Key, Removed: c.Removed, Size: c.Size, ETag: c.ETag, Sequencer: c.Sequencer, EventTime: c.EventTime})
		}
		rep, err = sync("events", b.Count, cs)
	}
	if err != nil {
		log.Warn("Sync of a batch of changes failed; it will be applied again", "error", err)
		b.Nack()
		// A failing store or volume is not asked again at once.
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return
	}
	o := notify.Outcome{}
	if c := rep.Changes; c != nil {
		o.Published, o.StaleCount = c.PublishedAt, int(c.Stale)
	}
	b.Ack(o)
}

func countRequests(r *s3store.Requests) wire.RequestCounts {
	return wire.RequestCounts{List: r.List.Load(), Get: r.Get.Load(), Head: r.Head.Load()}
}

// running are the running event sources; wait returns once they have stopped.
type running struct{ done []chan struct{} }

func (s *running) wait() {
	for _, d := range s.done {
		<-d
	}
}

func startSources(ctx context.Context, cfg Config, deb *notify.Debouncer, log *slog.Logger) (*running, error) {
	s := &running{}
	if cfg.WebhookListen != "" {
		token := cfg.WebhookToken
		if len(token) < 16 {
			return nil, errors.New("the webhook needs a token of at least 16 characters (--webhook-token or $PQCACHE_WEBHOOK_TOKEN)")
		}
		hook := notify.NewWebhook(deb, notify.WebhookConfig{
			Token: func(_ context.Context, key string) (string, error) {
				if key == Key {
					return token, nil
				}
				return "", nil
			},
			QueryToken: cfg.WebhookQueryToken,
			Log:        log,
		})
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.WebhookListen)
		if err != nil {
			return nil, fmt.Errorf("--webhook-listen: %w", err)
		}
		srv := notify.NewServer(hook, notify.DefaultServerTimeouts)
		done := make(chan struct{})
		s.done = append(s.done, done)
		go func() {
			defer close(done)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("Webhook stopped", "error", err)
			}
		}()
		go func() {
			<-ctx.Done()
			// ctx is done: the shutdown gets its own few seconds to let requests in flight finish.
			shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
		}()
		log.Info("Serving the event webhook", "url", "http://"+ln.Addr().String()+notify.DefaultWebhookPath+Key)
	}
	if cfg.SQSQueue != "" {
		src, err := notify.NewSQSSource(ctx, notify.SQSConfig{QueueURL: cfg.SQSQueue, Endpoint: cfg.SQSEndpoint, Region: cfg.SQSRegion, Log: log}, deb.For(Key))
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		s.done = append(s.done, done)
		go func() {
			defer close(done)
			src.Run(ctx)
		}()
	}
	return s, nil
}
