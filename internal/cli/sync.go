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
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/internal/podprogress"
)

// syncFlags are what `sync`, `stage` and `watch` run with: the worker's options from the contract
// (wire.SyncArgs, wire.StageArgs), and the CLI's own.
type syncFlags struct {
	wire.SyncOptions
	wire.GenerationOptions
	changes   string
	ephemeral bool
	local     localSyncFlags
}

// localSyncFlags are the flags of a sync run by hand, which no controller sets.
type localSyncFlags struct {
	jsonOut           bool
	cpuProfile, trace string
	// peer and peerGeneration make the sync a follower's (peer.go); serve makes it index its
	// generations for peers.
	peer           string
	peerGeneration int64
	servePeers     bool
}

// registerPeer registers the flags of a sync between nodes (sync only: stage never follows a peer).
func (l *localSyncFlags) registerPeer(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&l.peer, "peer", "", "Copy a generation from another node's \"pqcache peer serve\" (http://HOST:PORT/NAME) instead of the bucket; files the peer cannot serve, or serves wrong, come from the bucket. Needs --peer-generation.")
	fl.Int64Var(&l.peerGeneration, "peer-generation", 0, "With --peer: the generation to copy; this copy publishes it under the same number, and only whole.")
	fl.BoolVar(&l.servePeers, "serve-peers", false, "Index each published generation, so that \"pqcache peer serve\" can serve it to other nodes.")
}

func (l *localSyncFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&l.jsonOut, "json", false, "Print the report as JSON on stdout.")
	fl.StringVar(&l.cpuProfile, "cpuprofile", "", "Write a CPU profile of the sync to this file (go tool pprof).")
	fl.StringVar(&l.trace, "trace", "", "Write an execution trace of the sync to this file (go tool trace).")
	_ = fl.MarkHidden("cpuprofile")
	_ = fl.MarkHidden("trace")
}

// syncCommand is `pqcache sync`; run receives the parsed arguments (tests capture them).
func syncCommand(run func(*cobra.Command, wire.SyncArgs, localSyncFlags) error) *cobra.Command {
	var (
		a     wire.SyncArgs
		local localSyncFlags
	)
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
			a.Source, a.Dir = args[0], args[1]
			return run(cmd, a, local)
		},
	}
	a.Bind(cmd.Flags())
	local.register(cmd)
	local.registerPeer(cmd)
	return cmd
}

func newSyncCommand() *cobra.Command {
	return syncCommand(func(cmd *cobra.Command, a wire.SyncArgs, local localSyncFlags) error {
		f := syncFlags{SyncOptions: a.SyncOptions, GenerationOptions: a.GenerationOptions, changes: a.Changes, local: local}
		return runSync(cmd, f, a.Source, a.Dir, nil)
	})
}

// stageCommand is `pqcache stage`; run receives the parsed arguments (tests capture them).
func stageCommand(run func(*cobra.Command, wire.StageArgs, localSyncFlags) error) *cobra.Command {
	var (
		a     wire.StageArgs
		local localSyncFlags
	)
	cmd := &cobra.Command{
		Use:   "stage s3://BUCKET/PREFIX DIR --prefix SUB [--prefix SUB...]",
		Short: "Sync only some sub-prefixes (the fresh partitions) just before a query reads them",
		Long: `stage is sync limited to sub-prefixes of PREFIX, such as the newest partitions of a table.
It shares DIR's manifest with sync, so files already staged and unchanged cost nothing.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Source, a.Dir = args[0], args[1]
			return run(cmd, a, local)
		},
	}
	a.Bind(cmd.Flags())
	local.register(cmd)
	return cmd
}

func newStageCommand() *cobra.Command {
	return stageCommand(func(cmd *cobra.Command, a wire.StageArgs, local localSyncFlags) error {
		if len(a.Prefixes) == 0 {
			return errors.New("stage needs at least one --prefix")
		}
		f := syncFlags{SyncOptions: a.SyncOptions, ephemeral: a.Ephemeral, local: local}
		return runSync(cmd, f, a.Source, a.Dir, a.Prefixes)
	})
}

// parseS3URL splits s3://bucket/prefix.
func parseS3URL(s string) (bucket, prefix string, err error) { return wire.ParseS3URL(s) }

func runSync(cmd *cobra.Command, f syncFlags, src, dir string, subs []string) (err error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, opts, err := prepareSync(ctx, cmd, f, src, dir, subs)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	stopProfiles, err := startProfiles(f.local)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfiles()) }()
	if f.local.peer != "" {
		if err := followPeer(ctx, f.local.peer, f.local.peerGeneration, &opts); err != nil {
			return err
		}
	} else if f.local.servePeers && opts.Generations != nil {
		opts.Generations.Index = true
	}
	rep, syncErr := cache.Sync(ctx, store, opts)
	if opts.Progress != nil && f.Progress == "auto" {
		fmt.Fprintln(stderr)
	}
	if err := writeReport(cmd.OutOrStdout(), f, rep); err != nil {
		return err
	}
	return syncErr
}

// prepareSync checks the flags shared by sync, stage and watch and returns the store and the
// options of a sync: the options as a node agent gets them too (cache.OptionsFromArgs), and this
// process's own (logs, progress, sub-prefixes, a scratch volume, a change set).
func prepareSync(ctx context.Context, cmd *cobra.Command, f syncFlags, src, dir string, subs []string) (*s3store.Store, cache.Options, error) {
	cfg, opts, err := workerOptions(f, src, dir, subs)
	if err != nil {
		return nil, opts, err
	}
	log, err := newLogger(f.LogLevel)
	if err != nil {
		return nil, opts, err
	}
	store, ambientRefused, err := newWorkerStore(ctx, cfg)
	if err != nil {
		return nil, opts, err
	}
	opts.Log, opts.Requests, opts.AmbientRefused = log, store.Requests(), ambientRefused
	if f.changes != "" {
		if subs != nil {
			return nil, opts, errors.New("--changes applies to sync, not stage")
		}
		if opts.Changes, err = readChangeSet(f.changes); err != nil {
			return nil, opts, err
		}
	}
	stderr := cmd.ErrOrStderr()
	if f.DryRun {
		opts.OnPlan = func(a plan.Action) {
			if a.Copy {
				fmt.Fprintf(cmd.OutOrStdout(), "copy   %s (%s, %s)\n", a.Object.Key, wire.Bytes(a.Object.Size), a.Why)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "delete %s\n", a.Old.Key)
			}
		}
	}
	switch f.Progress {
	case "json":
		enc := json.NewEncoder(stderr)
		// In a worker pod, progress also goes to an annotation on the pod, for the controller to read.
		pod := podprogress.FromEnvironment(5*time.Second, func(err error) { log.Warn("Live progress disabled", "error", err) })
		opts.Progress = func(p wire.SyncProgress) {
			_ = enc.Encode(p)
			pod.Publish(ctx, p, false)
		}
	case "auto":
		if isTerminal(os.Stderr) && !f.DryRun {
			opts.Progress = func(p wire.SyncProgress) { fmt.Fprint(stderr, "\r"+progressLine(p)) }
		}
	case "none":
	default:
		return nil, opts, fmt.Errorf("--progress %q: must be auto, json or none", f.Progress)
	}
	return store, opts, nil
}

// workerOptions are the bucket's address and the options a sync's flags give, before this process's
// logs and progress: the Dataset's translation that a node agent shares (cache.OptionsFromArgs), and
// stage's sub-prefixes and scratch volume.
func workerOptions(f syncFlags, src, dir string, subs []string) (s3store.Config, cache.Options, error) {
	cfg, opts, err := cache.OptionsFromArgs(wire.SyncArgs{Source: src, Dir: dir, SyncOptions: f.SyncOptions, GenerationOptions: f.GenerationOptions})
	if err != nil {
		return cfg, opts, err
	}
	for _, s := range subs {
		if strings.HasPrefix(s, "/") {
			return cfg, opts, fmt.Errorf("--prefix %q is relative to %s and must not start with '/'", s, src)
		}
	}
	opts.SubPrefixes, opts.Ephemeral = subs, f.ephemeral
	if subs != nil {
		opts.Generations = nil
	}
	return cfg, opts, nil
}

func writeReport(stdout io.Writer, f syncFlags, rep *wire.SyncReport) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if f.ReportFile != "" {
		compact, err := rep.Compact(wire.TerminationMessageLimit)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.ReportFile, compact, 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	if f.local.jsonOut {
		_, err = fmt.Fprintln(stdout, string(data))
		return err
	}
	if rep.DryRun {
		fmt.Fprintf(stdout, "dry run: %d to copy (%s), %d to delete, %d unchanged\n",
			rep.Plan.Copies, wire.Bytes(rep.Plan.CopyBytes), rep.Plan.Deletes, rep.FilesUnchanged)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %d copied (%s at %s/s), %d deleted, %d unchanged, %d failed in %s; requests: %d LIST, %d GET\n",
		strings.ToLower(rep.Result), rep.FilesCopied, wire.Bytes(rep.BytesCopied), wire.Bytes(rep.BytesPerSecond),
		rep.FilesDeleted, rep.FilesUnchanged, rep.FilesFailed, time.Duration(rep.DurationMillis)*time.Millisecond,
		rep.Requests.List, rep.Requests.Get)
	if rep.Manifest.Generation > 0 {
		fmt.Fprintf(stdout, "manifest: %d files, %s, generation %d, %s\n", rep.Manifest.Files, wire.Bytes(rep.Manifest.Bytes), rep.Manifest.Generation, rep.Manifest.Digest)
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
				fmt.Fprintf(cmd.OutOrStdout(), "%d files (%s): %d mismatched, %d missing, %d extra\n", r.Files, wire.Bytes(r.Bytes), r.Mismatched, r.Missing, r.Extra)
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
			defer func() { _ = m.Close() }() // opened read-only
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

// startProfiles starts the CPU profile and the execution trace the flags ask for, until the returned
// stop is called. stop returns the errors of closing their files: a profile cut short (a full disk)
// must not pass for written.
func startProfiles(local localSyncFlags) (stop func() error, err error) {
	stopCPU := func() error { return nil }
	if local.cpuProfile != "" {
		if stopCPU, err = startCPUProfile(local.cpuProfile); err != nil {
			return nil, err
		}
	}
	stopTrace := func() error { return nil }
	if local.trace != "" {
		if stopTrace, err = startTrace(local.trace); err != nil {
			return nil, errors.Join(err, stopCPU())
		}
	}
	return func() error { return errors.Join(stopTrace(), stopCPU()) }, nil
}

// startCPUProfile profiles the process into path until the returned stop is called.
func startCPUProfile(path string) (stop func() error, err error) {
	return recordInto(path, "--cpuprofile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace traces the process into path until the returned stop is called.
func startTrace(path string) (stop func() error, err error) {
	return recordInto(path, "--trace", trace.Start, trace.Stop)
}

// recordInto creates path and starts a recorder (the CPU profiler or the execution tracer) writing
// into it; the returned stop ends the recording and closes the file, whose error counts: the file
// is the output the user asked for.
func recordInto(path, flag string, start func(io.Writer) error, end func()) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		_ = f.Close() // nothing written; the start error is the one to report
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		end()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}, nil
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
	line := fmt.Sprintf("%d/%d files, %s/%s, %s/s", p.FilesDone, p.FilesTotal, wire.Bytes(p.BytesDone), wire.Bytes(p.BytesTotal), wire.Bytes(p.BytesPerSecond))
	if p.Listing {
		line += ", listing..."
	} else if p.RemainingMillis > 0 {
		line += ", ETA " + wire.Duration(time.Duration(p.RemainingMillis)*time.Millisecond)
	}
	return line + "\x1b[K"
}

// readChangeSet reads a targeted sync's change set.
func readChangeSet(path string) (*wire.ChangeSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --changes: %w", err)
	}
	var cs wire.ChangeSet
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("reading --changes %s: %w", path, err)
	}
	return &cs, nil
}
