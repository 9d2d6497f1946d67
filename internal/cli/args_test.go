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
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
)

// The controllers render the workers' arguments from the contract's types; the workers parse them with
// these commands. Each struct here sets every field to a value other than its default, so a flag the
// controllers write and the CLI does not read (renamed, dropped, or bound to another field) comes back
// different.

func TestSyncArgsRoundTrip(t *testing.T) {
	want := wire.SyncArgs{
		Source: "s3://lake/tpch/", Dir: "/data",
		SyncOptions: wire.SyncOptions{
			S3Access: wire.S3Access{Endpoint: "http://s3.example.test:9000", Region: "eu-west-1", PathStyle: true},
			Include:  []string{"**/*.parquet", "lineitem/**"}, Exclude: []string{"**/_SUCCESS"},
			Parallel: 17, PartSize: 32 << 20, PageCache: true, Verify: wire.VerifySHA256, DryRun: true, NoDelete: true, MaxBytes: new(wire.Size(50 << 30)),
			Progress: "json", ReportFile: "/dev/termination-log", LogLevel: "debug", Table: wire.TableDelta,
		},
		GenerationOptions: wire.GenerationOptions{Generations: 5, GenerationMinAge: 7 * time.Minute, KeepGenerations: []int64{3, 9}},
		Changes:           "/changes/changes.json",
	}
	var got wire.SyncArgs
	parse(t, syncCommand(func(_ *cobra.Command, a wire.SyncArgs, _ localSyncFlags) error { got = a; return nil }), want.Args())
	assertAllSet(t, want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("sync arguments after a round trip through the CLI (-rendered +parsed):\n%s", d)
	}
}

func TestStageArgsRoundTrip(t *testing.T) {
	want := wire.StageArgs{
		Source: "s3://lake/tpch/", Dir: "/scratch",
		SyncOptions: wire.SyncOptions{
			S3Access: wire.S3Access{Endpoint: "http://s3.example.test:9000", Region: "eu-west-1", PathStyle: true},
			Include:  []string{"**/*.parquet"}, Exclude: []string{"**/_SUCCESS"},
			Parallel: 3, PartSize: 1536 << 10, PageCache: true, Verify: wire.VerifySize, DryRun: true, NoDelete: true, MaxBytes: new(wire.Size(0)),
			Progress: "none", ReportFile: "/dev/termination-log", LogLevel: "error", Table: wire.TableDelta,
		},
		Prefixes: []string{"lineitem/batch=7/", "orders/date=2026-12-03/"}, Ephemeral: true,
	}
	var got wire.StageArgs
	parse(t, stageCommand(func(_ *cobra.Command, a wire.StageArgs, _ localSyncFlags) error { got = a; return nil }), want.Args())
	assertAllSet(t, want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("stage arguments after a round trip through the CLI (-rendered +parsed):\n%s", d)
	}
}

func TestBenchArgsRoundTrip(t *testing.T) {
	want := wire.BenchArgs{
		Engine: "command", CommandArgs: []string{"/app/run query.py", "{query}", "{data}"}, Threads: 3, MemoryLimit: "2Gi",
		DuckDBSettings: []string{"prefetch_all_parquet_files=true", "threads=8"}, PolarsEngine: "streaming", PolarsForceAsync: true,
		Workload: "/workload/workload.yaml", Data: "/data/.pqcache/generations/7", FreshData: "/scratch", FreshPrefixes: []string{"lineitem/batch=7/", "orders/"},
		S3Access: wire.S3Access{Endpoint: "http://s3.example.test:9000", Region: "eu-west-1", PathStyle: true},
		Queries:  "q1,q6,q14", Iterations: 4, Warmups: 2, QueryTimeout: 90 * time.Second, Isolation: wire.IsolationSession, ProbeStreams: 8, Streams: 3,
		BenchRefresh: wire.BenchRefresh{DuringRefresh: true, RefreshSource: "s3://lake/tpch/", RefreshPercent: 10, RefreshEvery: 5 * time.Second},
		Label:        "duckdb / 2cpu / volume", ConfigName: "2cpu", IOType: "volume", ReportFile: "/dev/termination-log",
	}
	var got wire.BenchArgs
	parse(t, benchCommand(func(_ *cobra.Command, a wire.BenchArgs, _ benchLocal) error { got = a; return nil }), want.Args())
	assertAllSet(t, want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("bench arguments after a round trip through the CLI (-rendered +parsed):\n%s", d)
	}
}

// A count whose zero means something is written even when zero, and read back as zero, not as the
// worker's default.
func TestZeroCountsSurviveTheRoundTrip(t *testing.T) {
	sync := wire.SyncArgs{Source: "s3://lake/tpch/", Dir: "/data", GenerationOptions: wire.GenerationOptions{Generations: 0}}
	var gotSync wire.SyncArgs
	parse(t, syncCommand(func(_ *cobra.Command, a wire.SyncArgs, _ localSyncFlags) error { gotSync = a; return nil }), sync.Args())
	if gotSync.Generations != 0 {
		t.Fatalf("--generations 0 came back as %d", gotSync.Generations)
	}
	b := wire.BenchArgs{Data: "/data", Warmups: 0}
	var gotBench wire.BenchArgs
	parse(t, benchCommand(func(_ *cobra.Command, a wire.BenchArgs, _ benchLocal) error { gotBench = a; return nil }), b.Args())
	if gotBench.Warmups != 0 {
		t.Fatalf("--warmups 0 came back as %d", gotBench.Warmups)
	}
}

// parse runs cmd on a worker command line (its first element is the command's name), as the worker's
// binary would.
func parse(t *testing.T, cmd *cobra.Command, args []string) {
	t.Helper()
	if args[0] != cmd.Name() {
		t.Fatalf("command line %v is not for %s", args, cmd.Name())
	}
	cmd.SetArgs(args[1:])
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %v: %v", cmd.Name(), args[1:], err)
	}
}

// assertAllSet fails when a field of v (recursively, through embedded structs) is its zero value: a
// field left out of a round-trip test could be dropped unnoticed.
func assertAllSet(t *testing.T, v any) {
	t.Helper()
	var walk func(reflect.Value, string)
	walk = func(rv reflect.Value, path string) {
		for i := range rv.NumField() {
			f, name := rv.Field(i), path+rv.Type().Field(i).Name
			if f.Kind() == reflect.Struct {
				walk(f, name+".")
				continue
			}
			if f.IsZero() {
				t.Errorf("%s is not set in the round-trip test", name)
			}
		}
	}
	walk(reflect.ValueOf(v), "")
}
