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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/worker"
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
		if a.Table != "" {
			return errors.New("stage copies parts of a prefix, and a table's version is copied whole: sync it with --table instead")
		}
		f := syncFlags{SyncOptions: a.SyncOptions, ephemeral: a.Ephemeral, local: local}
		return runSync(cmd, f, a.Source, a.Dir, a.Prefixes)
	})
}

// parseS3URL splits s3://bucket/prefix.
func parseS3URL(s string) (bucket, prefix string, err error) { return wire.ParseS3URL(s) }

// syncRequest is the worker's request for the flags of sync, stage or watch.
func syncRequest(cmd *cobra.Command, f syncFlags, src, dir string, subs []string) worker.SyncRequest {
	return worker.SyncRequest{SyncArgs: wire.SyncArgs{Source: src, Dir: dir, SyncOptions: f.SyncOptions, GenerationOptions: f.GenerationOptions,
		Changes: f.changes}, Prefixes: subs, Ephemeral: f.ephemeral, Peer: f.local.peer, PeerGeneration: f.local.peerGeneration,
		ServePeers: f.local.servePeers, JSON: f.local.jsonOut, CPUProfile: f.local.cpuProfile, Trace: f.local.trace,
		Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
}

func runSync(cmd *cobra.Command, f syncFlags, src, dir string, subs []string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return worker.Sync(ctx, syncRequest(cmd, f, src, dir, subs))
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
