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

// `pqcache watch` is continuous refresh without Kubernetes (package cache/watch): the operator's
// event path run by one process against one directory.

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/watch"
	"github.com/pqcache/pqcache/worker"
)

type watchFlags struct {
	webhookListen, webhookToken string
	webhookQueryToken           bool
	sqsQueue, sqsEndpoint       string
	sqsRegion                   string
	fresh                       []string
	resync, window, maxDelay    time.Duration
	noInitial                   bool
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

  POST http://ADDR/events/` + watch.Key + `  with "Authorization: Bearer TOKEN", or ?token=TOKEN
  with --webhook-query-token

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
	fl.BoolVar(&w.webhookQueryToken, "webhook-query-token", false, "Also take the token from the query string (?token=TOKEN), for stores that cannot send an Authorization header (versitygw); access logs keep URLs, and the token with them.")
	fl.StringVar(&w.sqsQueue, "sqs-queue", "", "Long-poll this SQS queue URL for the bucket's event notifications.")
	fl.StringVar(&w.sqsEndpoint, "sqs-endpoint", "", "URL of an SQS-compatible server (default: AWS, or the queue URL's host).")
	fl.StringVar(&w.sqsRegion, "sqs-region", "", "The queue's region (default: from an AWS queue URL, else the AWS configuration).")
	fl.StringArrayVar(&w.fresh, "fresh", nil, "A prefix, relative to PREFIX, whose changes go first (repeatable), e.g. orders/date=2026-12-03/.")
	fl.DurationVar(&w.resync, "resync", time.Hour, "List the whole prefix this often, to catch lost notifications (0: never).")
	fl.DurationVar(&w.window, "window", watch.DefaultWindow, "A batch of changes is applied once the bucket has been quiet this long ...")
	fl.DurationVar(&w.maxDelay, "max-delay", watch.DefaultMaxDelay, "... but at most this long after its first change.")
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
	store, opts, err := worker.PrepareSync(ctx, syncRequest(cmd, f, src, dir, nil))
	if err != nil {
		return err
	}
	bucket, prefix, _ := parseS3URL(src)
	token := w.webhookToken
	if token == "" {
		token = os.Getenv("PQCACHE_WEBHOOK_TOKEN")
	}
	return watch.Run(ctx, store, opts, watch.Config{
		Bucket: bucket, Prefix: prefix, Include: f.Include, Exclude: f.Exclude,
		WebhookListen: w.webhookListen, WebhookToken: token, WebhookQueryToken: w.webhookQueryToken,
		SQSQueue: w.sqsQueue, SQSEndpoint: w.sqsEndpoint, SQSRegion: w.sqsRegion,
		Fresh: w.fresh, Resync: w.resync, Window: w.window, MaxDelay: w.maxDelay, NoInitial: w.noInitial,
	}, cmd.OutOrStdout())
}
