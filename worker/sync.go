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

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/plan"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/worker/podprogress"
)

// SyncRequest is one sync, stage or watch: the contract's arguments, and what a person at a terminal
// adds.
type SyncRequest struct {
	wire.SyncArgs
	// Prefixes, for a stage, are the sub-prefixes to sync (a stage publishes no generation);
	// Ephemeral says its directory dies with the pod, so copies need not be made durable.
	Prefixes  []string
	Ephemeral bool
	// Peer and PeerGeneration make the sync a follower's: it copies that generation of another node's
	// `pqcache peer serve` (http://HOST:PORT/NAME); ServePeers indexes each published generation for
	// peers.
	Peer           string
	PeerGeneration int64
	ServePeers     bool
	// JSON prints the report as JSON; CPUProfile and Trace record the sync into those files.
	JSON              bool
	CPUProfile, Trace string
	// Stdout gets the report and dry-run plan; Stderr the progress.
	Stdout, Stderr io.Writer
}

// Sync runs one sync or stage to its end and writes its report.
func Sync(ctx context.Context, req SyncRequest) (err error) {
	store, opts, err := PrepareSync(ctx, req)
	if err != nil {
		return err
	}
	stopProfiles, err := startProfiles(req.CPUProfile, req.Trace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfiles()) }()
	if req.Peer != "" {
		if err := followPeer(ctx, req.Peer, req.PeerGeneration, &opts); err != nil {
			return err
		}
	} else if req.ServePeers && opts.Generations != nil {
		opts.Generations.Index = true
	}
	rep, syncErr := cache.Sync(ctx, store, opts)
	if opts.Progress != nil && req.Progress == "auto" {
		fmt.Fprintln(req.Stderr)
	}
	if err := WriteReport(req.Stdout, rep, req.ReportFile, req.JSON); err != nil {
		return err
	}
	return syncErr
}

// PrepareSync checks a request and returns the store and the options of its sync: the options as a
// node agent gets them too (cache.OptionsFromArgs), and this process's own (logs, progress,
// sub-prefixes, a scratch volume, a change set).
func PrepareSync(ctx context.Context, req SyncRequest) (*s3store.Store, cache.Options, error) {
	cfg, opts, err := SyncOptions(req.SyncArgs, req.Prefixes, req.Ephemeral)
	if err != nil {
		return nil, opts, err
	}
	log, err := NewLogger(req.LogLevel)
	if err != nil {
		return nil, opts, err
	}
	store, ambientRefused, err := NewStore(ctx, cfg)
	if err != nil {
		return nil, opts, err
	}
	opts.Log, opts.Requests, opts.AmbientRefused = log, store.Requests(), ambientRefused
	if req.Changes != "" {
		if req.Prefixes != nil {
			return nil, opts, errors.New("--changes applies to sync, not stage")
		}
		if opts.Changes, err = readChangeSet(req.Changes); err != nil {
			return nil, opts, err
		}
	}
	if req.DryRun {
		opts.OnPlan = func(a plan.Action) { printPlan(req.Stdout, a) }
	}
	opts.Progress, err = progress(ctx, req, log)
	return store, opts, err
}

// SyncOptions are the bucket's address and the options a sync's arguments give, before this
// process's logs and progress: the Dataset's translation that a node agent shares
// (cache.OptionsFromArgs), and a stage's sub-prefixes and scratch volume.
func SyncOptions(a wire.SyncArgs, prefixes []string, ephemeral bool) (s3store.Config, cache.Options, error) {
	cfg, opts, err := cache.OptionsFromArgs(a)
	if err != nil {
		return cfg, opts, err
	}
	for _, s := range prefixes {
		if strings.HasPrefix(s, "/") {
			return cfg, opts, fmt.Errorf("--prefix %q is relative to %s and must not start with '/'", s, a.Source)
		}
	}
	opts.SubPrefixes, opts.Ephemeral = prefixes, ephemeral
	if prefixes != nil {
		opts.Generations = nil
	}
	return cfg, opts, nil
}

// printPlan prints one action of a dry run.
func printPlan(w io.Writer, a plan.Action) {
	if a.Copy {
		fmt.Fprintf(w, "copy   %s (%s, %s)\n", a.Object.Key, wire.Bytes(a.Object.Size), a.Why)
	} else {
		fmt.Fprintf(w, "delete %s\n", a.Old.Key)
	}
}

// progress is how the sync reports progress: JSON lines (and, in a worker pod, an annotation on the
// pod for the controller to read), a line on a terminal, or nothing.
func progress(ctx context.Context, req SyncRequest, log *slog.Logger) (func(wire.SyncProgress), error) {
	switch req.Progress {
	case "json":
		enc := json.NewEncoder(req.Stderr)
		pod := podprogress.FromEnvironment(5*time.Second, func(err error) { log.Warn("Live progress disabled", "error", err) })
		return func(p wire.SyncProgress) {
			_ = enc.Encode(p)
			pod.Publish(ctx, p, false)
		}, nil
	case "auto":
		if isTerminal(os.Stderr) && !req.DryRun {
			return func(p wire.SyncProgress) { fmt.Fprint(req.Stderr, "\r"+progressLine(p)) }, nil
		}
		return nil, nil
	case "none":
		return nil, nil
	}
	return nil, fmt.Errorf("--progress %q: must be auto, json or none", req.Progress)
}

// WriteReport writes a sync's report: compact into reportFile (a termination message) if set, and
// on w as JSON or as lines a person reads.
func WriteReport(w io.Writer, rep *wire.SyncReport, reportFile string, asJSON bool) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if reportFile != "" {
		compact, err := rep.Compact(wire.TerminationMessageLimit)
		if err != nil {
			return err
		}
		if err := os.WriteFile(reportFile, compact, 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	if asJSON {
		_, err = fmt.Fprintln(w, string(data))
		return err
	}
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: %d to copy (%s), %d to delete, %d unchanged\n",
			rep.Plan.Copies, wire.Bytes(rep.Plan.CopyBytes), rep.Plan.Deletes, rep.FilesUnchanged)
		return nil
	}
	fmt.Fprintf(w, "%s: %d copied (%s at %s/s), %d deleted, %d unchanged, %d failed in %s; requests: %d LIST, %d GET\n",
		strings.ToLower(rep.Result), rep.FilesCopied, wire.Bytes(rep.BytesCopied), wire.Bytes(rep.BytesPerSecond),
		rep.FilesDeleted, rep.FilesUnchanged, rep.FilesFailed, time.Duration(rep.DurationMillis)*time.Millisecond,
		rep.Requests.List, rep.Requests.Get)
	if rep.Manifest.Generation > 0 {
		fmt.Fprintf(w, "manifest: %d files, %s, generation %d, %s\n", rep.Manifest.Files, wire.Bytes(rep.Manifest.Bytes), rep.Manifest.Generation, rep.Manifest.Digest)
	}
	for _, a := range rep.Layout.Advice {
		fmt.Fprintf(w, "layout: %s\n", a)
	}
	for _, fe := range rep.Failed {
		fmt.Fprintf(w, "failed: %s: %s\n", fe.Key, fe.Error)
	}
	return nil
}

// NewLogger is a text logger on stderr at level (debug, info, warn or error).
func NewLogger(level string) (*slog.Logger, error) {
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
