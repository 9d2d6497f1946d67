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

package cli

// `pqcache watch` is continuous refresh without Kubernetes: the operator's event path (package
// cache/notify's sources and debouncer, targeted syncs, a listing sync as the safety net) run by one
// process against one directory.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/notify"
	"github.com/pqcache/pqcache/cache/s3store"
)

// watchKey is the debouncer's key for the one directory a watch keeps: the webhook's path is
// /events/<watchKey>.
const watchKey = "local/watch"

type watchFlags struct {
	webhookListen, webhookToken string
	sqsQueue, sqsEndpoint       string
	sqsRegion                   string
	fresh                       []string
	resync, window, maxDelay    time.Duration
	noInitial                   bool
}

// watchLine is what watch prints for each sync: one JSON line on stdout.
type watchLine struct {
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

func newWatchCommand() *cobra.Command {
	var (
		f syncFlags
		w watchFlags
	)
	cmd := &cobra.Command{
		Use:   "watch s3://BUCKET/PREFIX DIR (--webhook-listen ADDR | --sqs-queue URL)",
		Short: "Keep DIR continuously refreshed from S3 event notifications, with a listing sync as the safety net",
		Long: `watch syncs DIR once, then applies the changes S3 event notifications announce, each batch by a
targeted sync (one HEAD per named key, no listing), and lists the whole prefix again every --resync
as the safety net for lost notifications. Notifications come from an SQS queue (--sqs-queue; AWS S3
sends them there directly or through SNS or EventBridge) or are posted by the store to pqcache's
webhook (--webhook-listen; MinIO, Ceph RGW and versitygw post to a URL):

  POST http://ADDR/events/` + watchKey + `  with "Authorization: Bearer TOKEN", or ?token=TOKEN

It prints one JSON line per sync on stdout, and stops on SIGINT or SIGTERM.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatch(cmd, f, w, args[0], args[1])
		},
	}
	f.SyncOptions, f.GenerationOptions = wire.DefaultSyncOptions(), wire.DefaultGenerationOptions()
	fl := cmd.Flags()
	f.SyncOptions.Bind(fl)
	f.GenerationOptions.Bind(fl)
	fl.StringVar(&w.webhookListen, "webhook-listen", "", "Serve the event webhook on this address (host:port; keep it on a private network).")
	fl.StringVar(&w.webhookToken, "webhook-token", "", "The token a store must present to the webhook (default: $PQCACHE_WEBHOOK_TOKEN).")
	fl.StringVar(&w.sqsQueue, "sqs-queue", "", "Long-poll this SQS queue URL for the bucket's event notifications.")
	fl.StringVar(&w.sqsEndpoint, "sqs-endpoint", "", "URL of an SQS-compatible server (default: AWS, or the queue URL's host).")
	fl.StringVar(&w.sqsRegion, "sqs-region", "", "The queue's region (default: from an AWS queue URL, else the AWS configuration).")
	fl.StringArrayVar(&w.fresh, "fresh", nil, "A prefix, relative to PREFIX, whose changes go first (repeatable), e.g. orders/date=2026-12-03/.")
	fl.DurationVar(&w.resync, "resync", time.Hour, "List the whole prefix this often, to catch lost notifications (0: never).")
	fl.DurationVar(&w.window, "window", notify.DefaultWindow, "A batch of changes is applied once the bucket has been quiet this long ...")
	fl.DurationVar(&w.maxDelay, "max-delay", notify.DefaultMaxDelay, "... but at most this long after its first change.")
	fl.BoolVar(&w.noInitial, "no-initial-sync", false, "Skip the listing sync at start (DIR is known to be current).")
	return cmd
}

func runWatch(cmd *cobra.Command, f syncFlags, w watchFlags, src, dir string) error {
	if (w.webhookListen == "") == (w.sqsQueue == "") {
		return errors.New("watch needs exactly one of --webhook-listen and --sqs-queue")
	}
	if f.DryRun {
		return errors.New("watch takes no --dry-run")
	}
	if f.Progress == "auto" {
		f.Progress = "none"
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, opts, err := prepareSync(ctx, cmd, f, src, dir, nil)
	if err != nil {
		return err
	}
	log := opts.Log
	bucket, prefix, _ := parseS3URL(src)
	scope, err := notify.NewScope(bucket, prefix, f.Include, f.Exclude, w.fresh)
	if err != nil {
		return err
	}
	batches := make(chan *notify.Batch, 1)
	deb := notify.NewDebouncer(notify.DebounceConfig{Window: w.window, MaxDelay: w.maxDelay}, func(b *notify.Batch) {
		select {
		case batches <- b:
		case <-ctx.Done():
			b.Nack()
		}
	})
	defer deb.Close()
	deb.Configure(watchKey, scope)

	sources, err := startWatchSources(ctx, w, deb, log)
	if err != nil {
		return err
	}
	defer sources.wait()

	ws := &watchSyncer{ctx: ctx, store: store, opts: opts, out: json.NewEncoder(cmd.OutOrStdout())}
	if !w.noInitial {
		if _, err := ws.sync("initial", 0, nil); err != nil && ctx.Err() == nil {
			log.Warn("Initial sync failed; the next resync or batch tries again", "error", err)
		}
	}
	var resync <-chan time.Time
	if w.resync > 0 {
		t := time.NewTicker(w.resync)
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

// watchSyncer runs watch's syncs, each printed as one JSON line with the requests it made.
type watchSyncer struct {
	ctx      context.Context
	store    *s3store.Store
	opts     cache.Options
	out      *json.Encoder
	lastReqs wire.RequestCounts
}

// sync runs a listing sync (changes nil) or applies a change set of keys changes.
func (ws *watchSyncer) sync(trigger string, keys int, changes *wire.ChangeSet) (*wire.SyncReport, error) {
	o := ws.opts
	o.Changes = changes
	rep, err := cache.Sync(ws.ctx, ws.store, o)
	line := watchLine{Time: time.Now().UTC(), Trigger: trigger, Keys: keys, Result: rep.Result, Message: rep.Message,
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

// watchSources are the running event sources; wait returns once they have stopped.
type watchSources struct{ done []chan struct{} }

func (s *watchSources) wait() {
	for _, d := range s.done {
		<-d
	}
}

func startWatchSources(ctx context.Context, w watchFlags, deb *notify.Debouncer, log *slog.Logger) (*watchSources, error) {
	s := &watchSources{}
	if w.webhookListen != "" {
		token := w.webhookToken
		if token == "" {
			token = os.Getenv("PQCACHE_WEBHOOK_TOKEN")
		}
		if len(token) < 16 {
			return nil, errors.New("the webhook needs a token of at least 16 characters (--webhook-token or $PQCACHE_WEBHOOK_TOKEN)")
		}
		hook := notify.NewWebhook(deb, notify.WebhookConfig{
			Token: func(_ context.Context, key string) (string, error) {
				if key == watchKey {
					return token, nil
				}
				return "", nil
			},
			Log: log,
		})
		ln, err := net.Listen("tcp", w.webhookListen)
		if err != nil {
			return nil, fmt.Errorf("--webhook-listen: %w", err)
		}
		srv := &http.Server{Handler: hook, ReadHeaderTimeout: 10 * time.Second}
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
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
		}()
		log.Info("Serving the event webhook", "url", "http://"+ln.Addr().String()+notify.DefaultWebhookPath+watchKey)
	}
	if w.sqsQueue != "" {
		src, err := notify.NewSQSSource(ctx, notify.SQSConfig{QueueURL: w.sqsQueue, Endpoint: w.sqsEndpoint, Region: w.sqsRegion, Log: log}, deb.For(watchKey))
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
