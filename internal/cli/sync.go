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

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/internal/podprogress"
)

// syncFlags are shared by `sync` and `stage`.
type syncFlags struct {
	include, exclude []string
	parallel         int
	partSize         string
	verify           string
	dryRun           bool
	noDelete         bool
	jsonOut          bool
	endpoint         string
	region           string
	pathStyle        bool
	progress         string
	reportFile       string
	logLevel         string
	cpuProfile       string
	trace            string
	ephemeral        bool
	pageCache        bool
	changes          string
	// Generations (sync and watch only).
	generations      int
	generationMinAge time.Duration
	keepGenerations  []int64
}

func (f *syncFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.include, "include", nil, "Glob of keys to copy, relative to the prefix (repeatable; \"**\" spans directories). Default: all.")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "Glob of keys to leave out, relative to the prefix (repeatable).")
	fl.IntVar(&f.parallel, "parallel", cache.DefaultParallelism, "Concurrent GET requests, across and within files (1-256).")
	fl.StringVar(&f.partSize, "part-size", "16Mi", "Size of one ranged GET; larger objects are fetched in parts.")
	fl.BoolVar(&f.pageCache, "page-cache", false, "Write files over 256 KiB through the page cache instead of with direct I/O (O_DIRECT): for readers on this node that read them right after the sync, or a filesystem whose direct I/O is slow.")
	fl.StringVar(&f.verify, "verify", string(cache.VerifyChecksum), "How to check each file before publishing it: checksum (against what the store vouches for; the manifest keeps the store's checksum, else SHA-256), sha256 (the same, and SHA-256 of every file in the manifest), or size.")
	fl.BoolVar(&f.dryRun, "dry-run", false, "Print what would be copied and deleted, and the bytes to move; change nothing.")
	fl.BoolVar(&f.noDelete, "no-delete", false, "Keep local files whose objects are gone from the bucket.")
	fl.BoolVar(&f.jsonOut, "json", false, "Print the report as JSON on stdout.")
	fl.StringVar(&f.endpoint, "endpoint", "", "URL of an S3-compatible store (default: AWS S3).")
	fl.StringVar(&f.region, "region", "", "Bucket region (default: the AWS configuration, else us-east-1).")
	fl.BoolVar(&f.pathStyle, "path-style", false, "Address buckets as endpoint/bucket (most S3-compatible stores need it).")
	fl.StringVar(&f.progress, "progress", "auto", "Progress on stderr: auto (a bar on a terminal), json (JSON lines), none.")
	fl.StringVar(&f.reportFile, "report-file", "", "Also write the report to this file as compact JSON of at most 4 KiB (fits a termination message: /dev/termination-log).")
	fl.StringVar(&f.logLevel, "log-level", "warn", "Log level on stderr: debug, info, warn, error.")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "Write a CPU profile of the sync to this file (go tool pprof).")
	fl.StringVar(&f.trace, "trace", "", "Write an execution trace of the sync to this file (go tool trace).")
	fl.StringVar(&f.changes, "changes", "", "A targeted sync: check only the keys in this change set (JSON, as the operator writes it from S3 event notifications: {\"changes\":[{\"key\":...,\"removed\":...}]}) against the bucket, one HEAD each, instead of listing the prefix.")
	_ = fl.MarkHidden("cpuprofile")
	_ = fl.MarkHidden("trace")
}

// registerGenerations adds the flags of whole generations for readers (sync and watch).
func (f *syncFlags) registerGenerations(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.generations, "generations", 2, "Also publish each generation of DIR as a whole tree readers can hold (DIR/.pqcache/generations/N, current → the newest), keeping this many of the newest (0: the stable paths only).")
	fl.DurationVar(&f.generationMinAge, "generation-min-age", 5*time.Minute, "Keep an older generation this long after it stopped being current, for readers that resolved current without holding it.")
	fl.Int64SliceVar(&f.keepGenerations, "keep-generation", nil, "A generation a reader will read (repeatable): never removed.")
}

func newSyncCommand() *cobra.Command {
	var f syncFlags
	cmd := &cobra.Command{
		Use:   "sync s3://BUCKET/PREFIX DIR",
		Short: "Mirror an S3 prefix into a directory: copy new and changed files, delete vanished ones",
		Long: `sync lists the prefix, compares each object with the manifest kept in DIR/.pqcache
(size, LastModified and ETag), and copies what is new or changed, each file downloaded beside its
final place, verified, and then renamed into place, so readers never see a partial file. Unchanged
objects cost nothing: an unchanged prefix costs one listing and no GET.

Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE,
web identity). Exit status 1 means something was not copied; what was copied is complete.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSync(cmd, f, args[0], args[1], nil)
		},
	}
	f.register(cmd)
	f.registerGenerations(cmd)
	return cmd
}

func newStageCommand() *cobra.Command {
	var (
		f    syncFlags
		subs []string
	)
	cmd := &cobra.Command{
		Use:   "stage s3://BUCKET/PREFIX DIR --prefix SUB [--prefix SUB...]",
		Short: "Sync only some sub-prefixes (the fresh partitions) just before a query reads them",
		Long: `stage is sync limited to sub-prefixes of PREFIX, such as the newest partitions of a table.
It shares DIR's manifest with sync, so files already staged and unchanged cost nothing.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(subs) == 0 {
				return errors.New("stage needs at least one --prefix")
			}
			return runSync(cmd, f, args[0], args[1], subs)
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&subs, "prefix", nil, "Sub-prefix to stage, relative to PREFIX (repeatable), e.g. lineitem/batch=42/.")
	cmd.Flags().BoolVar(&f.ephemeral, "ephemeral", false, "DIR is scratch space that dies with the pod (an emptyDir): skip making the files and the manifest durable (no syncfs, no fsync). Files are still published atomically.")
	return cmd
}

// parseS3URL splits s3://bucket/prefix.
func parseS3URL(s string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", fmt.Errorf("source %q must look like s3://bucket/prefix", s)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("source %q has no bucket", s)
	}
	return bucket, prefix, nil
}

// sourceID names where the data comes from, for the manifest: a change re-copies everything. It
// keeps an endpoint's scheme and host only, never credentials someone put in the URL.
func sourceID(endpoint, bucket, prefix string) string {
	id := "s3://" + bucket + "/" + prefix
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err == nil {
			id += " at " + u.Scheme + "://" + u.Host
		}
	}
	return id
}

func runSync(cmd *cobra.Command, f syncFlags, src, dir string, subs []string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, opts, err := prepareSync(ctx, cmd, f, src, dir, subs)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	if f.cpuProfile != "" {
		stopProfile, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if f.trace != "" {
		tf, err := os.Create(f.trace)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(tf); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer func() { trace.Stop(); tf.Close() }()
	}
	rep, syncErr := cache.Sync(ctx, store, opts)
	if opts.Progress != nil && f.progress == "auto" {
		fmt.Fprintln(stderr)
	}
	if err := writeReport(cmd.OutOrStdout(), f, rep); err != nil {
		return err
	}
	return syncErr
}

// prepareSync checks the flags shared by sync, stage and watch and returns the store and the
// options of a sync.
func prepareSync(ctx context.Context, cmd *cobra.Command, f syncFlags, src, dir string, subs []string) (*s3store.Store, cache.Options, error) {
	var opts cache.Options
	bucket, prefix, err := parseS3URL(src)
	if err != nil {
		return nil, opts, err
	}
	if f.parallel < 1 || f.parallel > 256 {
		return nil, opts, fmt.Errorf("--parallel %d: must be between 1 and 256", f.parallel)
	}
	q, err := resource.ParseQuantity(f.partSize)
	if err != nil || q.Value() < 1<<20 || q.Value() > 5<<30 {
		return nil, opts, fmt.Errorf("--part-size %q: must be a size between 1Mi and 5Gi", f.partSize)
	}
	verify := cache.VerifyMode(f.verify)
	if verify != cache.VerifyChecksum && verify != cache.VerifySHA256 && verify != cache.VerifySize {
		return nil, opts, fmt.Errorf("--verify %q: must be checksum, sha256 or size", f.verify)
	}
	for _, s := range subs {
		if strings.HasPrefix(s, "/") {
			return nil, opts, fmt.Errorf("--prefix %q is relative to %s and must not start with '/'", s, src)
		}
	}
	log, err := newLogger(f.logLevel)
	if err != nil {
		return nil, opts, err
	}
	store, err := s3store.New(ctx, s3store.Config{Bucket: bucket, Region: f.region, Endpoint: f.endpoint, PathStyle: f.pathStyle})
	if err != nil {
		return nil, opts, err
	}
	opts = cache.Options{
		Dir: dir, Source: sourceID(f.endpoint, bucket, prefix), Prefix: prefix, SubPrefixes: subs,
		Include: f.include, Exclude: f.exclude, Parallelism: f.parallel, PartSize: q.Value(),
		Verify: verify, Prune: !f.noDelete, Ephemeral: f.ephemeral, PageCache: f.pageCache, DryRun: f.dryRun, Log: log, Requests: store.Requests(),
	}
	if f.generations < 0 || f.generations > generations.DefaultMaxKept {
		return nil, opts, fmt.Errorf("--generations %d: must be between 0 and %d", f.generations, generations.DefaultMaxKept)
	}
	if f.generations > 0 && subs == nil && !f.dryRun {
		opts.Generations = &generations.Policy{Keep: f.generations, MinAge: f.generationMinAge, Pinned: f.keepGenerations}
	}
	if f.changes != "" {
		if subs != nil {
			return nil, opts, errors.New("--changes applies to sync, not stage")
		}
		if opts.Changes, err = readChangeSet(f.changes); err != nil {
			return nil, opts, err
		}
	}
	stderr := cmd.ErrOrStderr()
	if f.dryRun {
		opts.OnPlan = func(a plan.Action) {
			if a.Copy {
				fmt.Fprintf(cmd.OutOrStdout(), "copy   %s (%s, %s)\n", a.Object.Key, humanBytes(a.Object.Size), a.Why)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "delete %s\n", a.Old.Key)
			}
		}
	}
	switch f.progress {
	case "json":
		enc := json.NewEncoder(stderr)
		// In a worker pod, progress also goes to an annotation on the pod, for the controller to read.
		pod := podprogress.FromEnvironment(5*time.Second, func(err error) { log.Warn("Live progress disabled", "error", err) })
		opts.Progress = func(p wire.SyncProgress) {
			_ = enc.Encode(p)
			pod.Publish(ctx, p, false)
		}
	case "auto":
		if isTerminal(os.Stderr) && !f.dryRun {
			opts.Progress = func(p wire.SyncProgress) { fmt.Fprint(stderr, "\r"+progressLine(p)) }
		}
	case "none":
	default:
		return nil, opts, fmt.Errorf("--progress %q: must be auto, json or none", f.progress)
	}
	return store, opts, nil
}

func writeReport(stdout io.Writer, f syncFlags, rep *wire.SyncReport) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if f.reportFile != "" {
		compact, err := rep.Compact(wire.TerminationMessageLimit)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.reportFile, compact, 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	if f.jsonOut {
		_, err = fmt.Fprintln(stdout, string(data))
		return err
	}
	if rep.DryRun {
		fmt.Fprintf(stdout, "dry run: %d to copy (%s), %d to delete, %d unchanged\n",
			rep.Plan.Copies, humanBytes(rep.Plan.CopyBytes), rep.Plan.Deletes, rep.FilesUnchanged)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %d copied (%s at %s/s), %d deleted, %d unchanged, %d failed in %s; requests: %d LIST, %d GET\n",
		strings.ToLower(rep.Result), rep.FilesCopied, humanBytes(rep.BytesCopied), humanBytes(rep.BytesPerSecond),
		rep.FilesDeleted, rep.FilesUnchanged, rep.FilesFailed, time.Duration(rep.DurationMillis)*time.Millisecond,
		rep.Requests.List, rep.Requests.Get)
	if rep.Manifest.Generation > 0 {
		fmt.Fprintf(stdout, "manifest: %d files, %s, generation %d, %s\n", rep.Manifest.Files, humanBytes(rep.Manifest.Bytes), rep.Manifest.Generation, rep.Manifest.Digest)
	}
	for _, a := range rep.Layout.Advice {
		fmt.Fprintf(stdout, "layout: %s\n", a)
	}
	for _, fe := range rep.Failed {
		fmt.Fprintf(stdout, "failed: %s: %s\n", fe.Key, fe.Error)
	}
	return nil
}

func newVerifyCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Re-hash every cached file against the manifest; report mismatched, missing and extra files",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := cache.Verify(args[0])
			if err != nil {
				return err
			}
			if jsonOut {
				data, _ := json.MarshalIndent(r, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
			} else {
				for _, p := range r.Problems {
					fmt.Fprintln(cmd.OutOrStdout(), p)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d files (%s): %d mismatched, %d missing, %d extra\n", r.Files, humanBytes(r.Bytes), r.Mismatched, r.Missing, r.Extra)
			}
			if !r.OK() {
				return fmt.Errorf("%s does not match its manifest", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "Print the report as JSON.")
	return cmd
}

func newManifestCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "manifest", Short: "Inspect a cache's manifest"}
	var jsonOut bool
	ls := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the files the manifest says are published",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := manifest.OpenReadOnly(args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			return m.Scan("", func(e manifest.Entry) error {
				if jsonOut {
					return enc.Encode(e)
				}
				rows := ""
				if e.Parquet != nil {
					rows = fmt.Sprintf("  %d rows in %d groups", e.Parquet.Rows, e.Parquet.RowGroups)
				}
				_, err := fmt.Fprintf(out, "%s  %12d  %s  %s%s\n", e.LastModified.Format(time.RFC3339), e.Size, shortHash(e.Hash()), e.Key, rows)
				return err
			})
		},
	}
	ls.Flags().BoolVar(&jsonOut, "json", false, "Print one JSON entry per line.")
	cmd.AddCommand(ls)
	return cmd
}

func shortHash(h string) string {
	if _, v, ok := strings.Cut(h, ":"); ok { // a store checksum: its value (a CRC64NVME is 12 characters)
		h = v
	}
	if len(h) < 12 {
		return fmt.Sprintf("%-12s", h)
	}
	return h[:12]
}

// startCPUProfile profiles the process into path until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func progressLine(p wire.SyncProgress) string {
	line := fmt.Sprintf("%d/%d files, %s/%s, %s/s", p.FilesDone, p.FilesTotal, humanBytes(p.BytesDone), humanBytes(p.BytesTotal), humanBytes(p.BytesPerSecond))
	if p.Listing {
		line += ", listing..."
	} else if p.RemainingMillis > 0 {
		line += ", ETA " + (time.Duration(p.RemainingMillis) * time.Millisecond).Round(time.Second).String()
	}
	return line + "\x1b[K"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// readChangeSet reads a targeted sync's change set.
func readChangeSet(path string) (*cache.ChangeSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --changes: %w", err)
	}
	var cs cache.ChangeSet
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("reading --changes %s: %w", path, err)
	}
	return &cs, nil
}
