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

package wire

import (
	"fmt"
	"strconv"
	"time"
)

// The worker's arguments are typed: a controller fills a struct (SyncArgs, StageArgs, BenchArgs) and
// renders it with Args; the worker's command binds the same struct to its flags with Bind. Each type
// lists its flags once (its flags method), and both directions walk that list, so a flag renamed or
// dropped on one side is renamed or dropped on the other, and a round trip through the CLI's parser
// gives the struct back (the CLI's tests check that). A field the controller leaves empty or zero is
// not rendered, and the worker applies its default.

// FlagSet is what the argument types bind their flags to: the CLI's *pflag.FlagSet has these methods.
// It is an interface so that this package imports no flag library.
type FlagSet interface {
	StringVar(p *string, name string, value string, usage string)
	StringArrayVar(p *[]string, name string, value []string, usage string)
	StringSliceVar(p *[]string, name string, value []string, usage string)
	IntVar(p *int, name string, value int, usage string)
	Int64SliceVar(p *[]int64, name string, value []int64, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
	// Func binds a flag whose value fn parses: the typed values (Size, VerifyMode).
	Func(name string, usage string, fn func(string) error)
}

// flagKind says how a flag is bound and rendered.
type flagKind int

const (
	kindString flagKind = iota
	kindStringArray
	kindStringSlice
	kindInt
	kindInt64Slice
	kindBool
	kindDuration
	kindSize
	kindOptionalSize
	kindVerify
)

// flag is one entry of an argument type's list: where the value lives, its default and its help.
type flag struct {
	name, usage string
	kind        flagKind
	ptr         any
	def         any
	// always renders the flag even when zero: a count whose zero means something (--generations 0).
	always bool
}

// flagList collects an argument type's flags, in the order they are rendered.
type flagList []flag

func (l *flagList) str(p *string, name, def, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindString, ptr: p, def: def})
}

func (l *flagList) strings(p *[]string, name, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindStringArray, ptr: p})
}

// commaStrings is a list flag whose values may also be given comma-separated (pflag's StringSlice).
func (l *flagList) commaStrings(p *[]string, name, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindStringSlice, ptr: p})
}

func (l *flagList) int(p *int, name string, def int, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindInt, ptr: p, def: def})
}

// count is an int flag rendered even when zero.
func (l *flagList) count(p *int, name string, def int, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindInt, ptr: p, def: def, always: true})
}

func (l *flagList) int64s(p *[]int64, name, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindInt64Slice, ptr: p})
}

func (l *flagList) bool(p *bool, name, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindBool, ptr: p, def: false})
}

func (l *flagList) duration(p *time.Duration, name string, def time.Duration, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindDuration, ptr: p, def: def})
}

// size is a size flag: written as a quantity ("16Mi"), held in bytes. Zero is not rendered.
func (l *flagList) size(p *Size, name string, def Size, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindSize, ptr: p, def: def})
}

// optionalSize is a size flag whose absence means something else than any size (--max-bytes: no
// cap, where 0 keeps nothing): nil is not rendered, every size is, 0 included.
func (l *flagList) optionalSize(p **Size, name, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindOptionalSize, ptr: p})
}

// verify is the verify mode's flag, refused at parse time unless it is one of the modes.
func (l *flagList) verify(p *VerifyMode, name string, def VerifyMode, usage string) {
	*l = append(*l, flag{name: name, usage: usage, kind: kindVerify, ptr: p, def: def})
}

// bind registers every flag of the list with fs, each with its default.
func (l flagList) bind(fs FlagSet) {
	for _, f := range l {
		switch f.kind {
		case kindString:
			fs.StringVar(f.ptr.(*string), f.name, f.def.(string), f.usage)
		case kindStringArray:
			fs.StringArrayVar(f.ptr.(*[]string), f.name, nil, f.usage)
		case kindStringSlice:
			fs.StringSliceVar(f.ptr.(*[]string), f.name, nil, f.usage)
		case kindInt:
			fs.IntVar(f.ptr.(*int), f.name, f.def.(int), f.usage)
		case kindInt64Slice:
			fs.Int64SliceVar(f.ptr.(*[]int64), f.name, nil, f.usage)
		case kindBool:
			fs.BoolVar(f.ptr.(*bool), f.name, false, f.usage)
		case kindDuration:
			fs.DurationVar(f.ptr.(*time.Duration), f.name, f.def.(time.Duration), f.usage)
		case kindSize:
			bindSize(fs, f)
		case kindOptionalSize:
			p := f.ptr.(**Size)
			fs.Func(f.name, f.usage, func(v string) error {
				n, err := ParseSize(v)
				if err != nil {
					return err
				}
				*p = new(Size(n))
				return nil
			})
		case kindVerify:
			bindVerify(fs, f)
		}
	}
}

// bindSize binds a size flag: the field holds the default until the flag is parsed, as pflag's own
// kinds do.
func bindSize(fs FlagSet, f flag) {
	p, def := f.ptr.(*Size), f.def.(Size)
	*p = def
	usage := f.usage
	if def != 0 {
		usage += " (default " + def.String() + ")"
	}
	fs.Func(f.name, usage, func(v string) error {
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*p = Size(n)
		return nil
	})
}

// bindVerify binds the verify mode's flag, checking the mode as it is parsed.
func bindVerify(fs FlagSet, f flag) {
	p, def := f.ptr.(*VerifyMode), f.def.(VerifyMode)
	*p = def
	fs.Func(f.name, f.usage+" (default "+string(def)+")", func(v string) error {
		m := VerifyMode(v)
		if !m.Valid() {
			return fmt.Errorf("%q: want checksum, sha256 or size", v)
		}
		*p = m
		return nil
	})
}

// fillDefaults gives each field that render would leave out its flag's default: what the worker's
// parser gives a field the command line did not carry.
func (l flagList) fillDefaults() {
	for _, f := range l {
		switch f.kind {
		case kindString:
			if p := f.ptr.(*string); *p == "" {
				*p = f.def.(string)
			}
		case kindInt:
			if p := f.ptr.(*int); *p == 0 && !f.always {
				*p = f.def.(int)
			}
		case kindDuration:
			if p := f.ptr.(*time.Duration); *p == 0 {
				*p = f.def.(time.Duration)
			}
		case kindSize:
			if p := f.ptr.(*Size); *p == 0 {
				*p = f.def.(Size)
			}
		case kindVerify:
			if p := f.ptr.(*VerifyMode); *p == "" {
				*p = f.def.(VerifyMode)
			}
		}
	}
}

// render writes the flags that carry a value: strings that are not empty, numbers and durations that
// are not zero (and counts whose zero means something, as --generations 0 does), bools that are true,
// and each element of a list. A field left empty or zero takes the worker's default.
func (l flagList) render() []string {
	var out []string
	for _, f := range l {
		switch f.kind {
		case kindString:
			if v := *f.ptr.(*string); v != "" {
				out = append(out, "--"+f.name, v)
			}
		case kindStringArray, kindStringSlice:
			for _, v := range *f.ptr.(*[]string) {
				out = append(out, "--"+f.name, v)
			}
		case kindInt:
			if v := *f.ptr.(*int); v != 0 || f.always {
				out = append(out, "--"+f.name, strconv.Itoa(v))
			}
		case kindInt64Slice:
			for _, v := range *f.ptr.(*[]int64) {
				out = append(out, "--"+f.name, strconv.FormatInt(v, 10))
			}
		case kindBool:
			if *f.ptr.(*bool) {
				out = append(out, "--"+f.name)
			}
		case kindDuration:
			if v := *f.ptr.(*time.Duration); v != 0 {
				out = append(out, "--"+f.name, v.String())
			}
		case kindSize:
			if v := *f.ptr.(*Size); v != 0 {
				out = append(out, "--"+f.name, v.String())
			}
		case kindOptionalSize:
			if v := *f.ptr.(**Size); v != nil {
				out = append(out, "--"+f.name, v.String())
			}
		case kindVerify:
			if v := *f.ptr.(*VerifyMode); v != "" {
				out = append(out, "--"+f.name, string(v))
			}
		}
	}
	return out
}

// S3Access is how a worker reaches the bucket, beside the credentials in its environment.
type S3Access struct {
	// Endpoint is the URL of an S3-compatible store; empty: AWS S3.
	Endpoint string
	// Region of the bucket; empty: the AWS configuration's, else us-east-1.
	Region string
	// PathStyle addresses buckets as endpoint/bucket.
	PathStyle bool
}

// Bind registers --endpoint, --region and --path-style with fs; scope, if not empty, starts their help
// ("For s3:// data: ").
func (a *S3Access) Bind(fs FlagSet, scope string) {
	var l flagList
	a.flags(&l, scope)
	l.bind(fs)
}

func (a *S3Access) flags(l *flagList, scope string) {
	l.str(&a.Endpoint, "endpoint", "", scope+"URL of an S3-compatible store (default: AWS S3).")
	l.str(&a.Region, "region", "", scope+"Bucket region (default: the AWS configuration, else us-east-1).")
	l.bool(&a.PathStyle, "path-style", scope+"Address buckets as endpoint/bucket (most S3-compatible stores need it).")
}

// The sync worker's command-line defaults.
const (
	DefaultSyncParallel = 8
	DefaultPartSize     = Size(16 << 20)
	DefaultVerify       = VerifyChecksum
	DefaultProgress     = "auto"
	DefaultLogLevel     = "warn"
	DefaultGenerations  = 2
	// DefaultGenerationMinAge is how long an older generation stays after it stopped being current.
	DefaultGenerationMinAge = 5 * time.Minute
)

// SyncOptions are the flags `pqcache sync`, `stage` and `watch` share: what to copy, how, and where
// the worker reports.
type SyncOptions struct {
	S3Access
	// Include and Exclude are globs of keys relative to the prefix.
	Include, Exclude []string
	// Parallel bounds the GET requests in flight (1-256).
	Parallel int
	// PartSize is the size of one ranged GET.
	PartSize Size
	// PageCache writes large files through the page cache instead of with direct I/O.
	PageCache bool
	// Verify is how each file is checked before it is published.
	Verify VerifyMode
	// DryRun plans and reports, changing nothing.
	DryRun bool
	// NoDelete keeps files whose objects are gone.
	NoDelete bool
	// MaxBytes caps the size of the generation a sync makes (0 keeps no file); nil: no cap.
	MaxBytes *Size
	// Progress is auto, json or none.
	Progress string
	// ReportFile also receives the compact report (a pod's termination message).
	ReportFile string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// Table names the format of a table whose root is the prefix ("delta"): a sync copies exactly
	// the files of its newest committed version. Empty: the prefix is mirrored as it is listed.
	Table string
}

// TableDelta is the Delta Lake format, the one table format a sync reads (SyncOptions.Table).
const TableDelta = "delta"

// DefaultSyncOptions are the options a worker applies to flags it was not given.
func DefaultSyncOptions() SyncOptions {
	return SyncOptions{Parallel: DefaultSyncParallel, PartSize: DefaultPartSize, Verify: DefaultVerify, Progress: DefaultProgress, LogLevel: DefaultLogLevel}
}

// Bind registers the shared sync flags with fs (for commands that add their own, like watch).
func (o *SyncOptions) Bind(fs FlagSet) {
	var l flagList
	o.flags(&l)
	o.sourceFlags(&l)
	l.bind(fs)
}

// flags lists how the sync runs and reports; sourceFlags what it copies and from where. A command
// line has the first group first and the second after its own flags.
func (o *SyncOptions) flags(l *flagList) {
	d := DefaultSyncOptions()
	l.int(&o.Parallel, "parallel", d.Parallel, "Concurrent GET requests, across and within files (1-256).")
	l.str(&o.Progress, "progress", d.Progress, "Progress on stderr: auto (a bar on a terminal), json (JSON lines), none.")
	l.str(&o.LogLevel, "log-level", d.LogLevel, "Log level on stderr: debug, info, warn, error.")
	l.str(&o.ReportFile, "report-file", "", "Also write the report to this file as compact JSON of at most 4 KiB (fits a termination message: /dev/termination-log).")
	l.size(&o.PartSize, "part-size", d.PartSize, "Size of one ranged GET; larger objects are fetched in parts.")
	l.verify(&o.Verify, "verify", d.Verify, "How to check each file before publishing it: checksum (against what the store vouches for; the manifest keeps the store's checksum, else SHA-256), sha256 (the same, and SHA-256 of every file in the manifest), or size.")
	l.bool(&o.NoDelete, "no-delete", "Keep local files whose objects are gone from the bucket.")
	l.optionalSize(&o.MaxBytes, "max-bytes", "Refuse a sync whose files would add up to more than this size (a quantity such as 50Gi), before copying past it; the last synced files stay. Default: no cap.")
	l.bool(&o.DryRun, "dry-run", "Print what would be copied and deleted, and the bytes to move; change nothing.")
	l.bool(&o.PageCache, "page-cache", "Write files over 256 KiB through the page cache instead of with direct I/O (O_DIRECT): for readers on this node that read them right after the sync, or a filesystem whose direct I/O is slow.")
}

func (o *SyncOptions) sourceFlags(l *flagList) {
	l.strings(&o.Include, "include", "Glob of keys to copy, relative to the prefix (repeatable; \"**\" spans directories). Default: all.")
	l.strings(&o.Exclude, "exclude", "Glob of keys to leave out, relative to the prefix (repeatable).")
	l.str(&o.Table, "table", "", "The prefix is the root of a table of this format (delta): copy exactly the files of its newest committed version, and publish each version as one generation. Default: mirror the prefix as listed.")
	o.S3Access.flags(l, "")
}

// GenerationOptions are the flags of whole generations for readers (sync and watch).
type GenerationOptions struct {
	// Generations is how many of the newest generations to keep as trees (0: the stable paths only).
	Generations int
	// GenerationMinAge keeps an older generation this long after it stopped being current.
	GenerationMinAge time.Duration
	// KeepGenerations are generations a reader will read: never removed.
	KeepGenerations []int64
}

// DefaultGenerationOptions are the options a worker applies to flags it was not given.
func DefaultGenerationOptions() GenerationOptions {
	return GenerationOptions{Generations: DefaultGenerations, GenerationMinAge: DefaultGenerationMinAge}
}

// Bind registers the generation flags with fs.
func (o *GenerationOptions) Bind(fs FlagSet) {
	var l flagList
	o.flags(&l)
	l.bind(fs)
}

func (o *GenerationOptions) flags(l *flagList) {
	d := DefaultGenerationOptions()
	l.count(&o.Generations, "generations", d.Generations, "Also publish each generation of DIR as a whole tree readers can hold (DIR/.pqcache/generations/N, current → the newest), keeping this many of the newest (0: the stable paths only).")
	l.duration(&o.GenerationMinAge, "generation-min-age", d.GenerationMinAge, "Keep an older generation this long after it stopped being current, for readers that resolved current without holding it.")
	l.int64s(&o.KeepGenerations, "keep-generation", "A generation a reader will read (repeatable): never removed.")
}

// SyncArgs are `pqcache sync SOURCE DIR` and its flags.
type SyncArgs struct {
	// Source is s3://BUCKET/PREFIX; Dir the directory the sync keeps.
	Source, Dir string
	SyncOptions
	GenerationOptions
	// Changes makes the sync a targeted one: the change set file (JSON, a ChangeSet) to apply.
	Changes string
}

func (a *SyncArgs) flags() flagList {
	var l flagList
	a.SyncOptions.flags(&l)
	a.GenerationOptions.flags(&l)
	a.sourceFlags(&l)
	l.str(&a.Changes, "changes", "", "A targeted sync: check only the keys in this change set (JSON, as the operator writes it from S3 event notifications: {\"changes\":[{\"key\":...,\"removed\":...}]}) against the bucket, one HEAD each, instead of listing the prefix.")
	return l
}

// Bind registers the flags of `pqcache sync` with fs, with their defaults (DefaultSyncOptions,
// DefaultGenerationOptions), which a's fields take until the flags are parsed.
func (a *SyncArgs) Bind(fs FlagSet) { a.flags().bind(fs) }

// WithDefaults returns a with the worker's default in every field that Args would leave out: the
// arguments a worker parses from a.Args(). A node agent, which runs the engine in-process, takes the
// same arguments this way instead of through a command line.
func (a SyncArgs) WithDefaults() SyncArgs {
	a.flags().fillDefaults()
	return a
}

// Args is the worker's command line: "sync", the source, the directory and the flags.
func (a SyncArgs) Args() []string {
	return append([]string{"sync", a.Source, a.Dir}, a.flags().render()...)
}

// StageArgs are `pqcache stage SOURCE DIR --prefix SUB...` and its flags.
type StageArgs struct {
	// Source is s3://BUCKET/PREFIX; Dir the directory the staged files go to.
	Source, Dir string
	SyncOptions
	// Prefixes are the sub-prefixes to stage, relative to the source's prefix.
	Prefixes []string
	// Ephemeral says Dir dies with the pod: nothing is made durable.
	Ephemeral bool
}

func (a *StageArgs) flags() flagList {
	var l flagList
	a.SyncOptions.flags(&l)
	l.strings(&a.Prefixes, "prefix", "Sub-prefix to stage, relative to PREFIX (repeatable), e.g. lineitem/batch=42/.")
	l.bool(&a.Ephemeral, "ephemeral", "DIR is scratch space that dies with the pod (an emptyDir): skip making the files and the manifest durable (no syncfs, no fsync). Files are still published atomically.")
	a.sourceFlags(&l)
	return l
}

// Bind registers the flags of `pqcache stage` with fs.
func (a *StageArgs) Bind(fs FlagSet) { a.flags().bind(fs) }

// Args is the worker's command line: "stage", the source, the directory and the flags.
func (a StageArgs) Args() []string {
	return append([]string{"stage", a.Source, a.Dir}, a.flags().render()...)
}

// The bench runner's command-line defaults.
const (
	DefaultEngine       = "duckdb"
	DefaultWorkload     = "tpch"
	DefaultPolarsEngine = "in-memory"
	DefaultIterations   = 3
	DefaultWarmups      = 1
	DefaultQueryTimeout = 30 * time.Minute
	DefaultMemoryLimit  = "auto"
	DefaultIsolation    = IsolationProcess
	// DefaultStreams runs the queries alone, one stream; MaxStreams bounds --streams and the API's streams.
	DefaultStreams = 1
	MaxStreams     = 16
)

// BenchArgs are the flags of `pqcache bench` that a BenchRun's Job sets: what to run, on what data,
// how often, and where to report.
type BenchArgs struct {
	// Engine is duckdb, polars, spark or command.
	Engine string
	// CommandArgs is a command engine's command, one argument each.
	CommandArgs []string
	// Threads per query (0: one per CPU the process may use).
	Threads int
	// MemoryLimit is DuckDB's memory_limit: auto, none or a size.
	MemoryLimit string
	// DuckDBSettings are DuckDB settings for every query, as name=value.
	DuckDBSettings []string
	// PolarsEngine is Polars' engine: in-memory, streaming or auto.
	PolarsEngine string
	// PolarsForceAsync sets POLARS_FORCE_ASYNC=1: the object-store reader for local files too.
	PolarsForceAsync bool
	// Workload is a built-in workload (tpch, scan, paging) or a workload file (YAML or JSON).
	Workload string
	// Data is the directory or s3:// URL the queries read.
	Data string
	// FreshData and FreshPrefixes replace those prefixes of Data with staged (or bucket) copies.
	FreshData     string
	FreshPrefixes []string
	S3Access
	// Queries names the workload's queries to run ("q1,q6"; for TPC-H also "1-22"); empty: all.
	Queries string
	// Iterations and Warmups are the measured and unmeasured runs per query.
	Iterations, Warmups int
	// QueryTimeout bounds one run of one query.
	QueryTimeout time.Duration
	// Isolation is IsolationProcess (a fresh process per query per iteration) or IsolationSession
	// (one process per iteration runs every query in turn).
	Isolation string
	// ProbeStreams, when positive, measures the input's read throughput after the queries.
	ProbeStreams int
	BenchRefresh
	// Streams is how many query streams run at once, each its own permutation of the queries
	// (1-MaxStreams; 1: the queries in the workload's order, alone).
	Streams int
	// Label, ConfigName and IOType name the run, its resource configuration and its input in reports.
	Label, ConfigName, IOType string
	// ReportFile also receives the compact summary (a pod's termination message).
	ReportFile string
}

// BenchRefresh are the flags of a run measured during refreshes: while the queries run, the runner
// rewrites RefreshPercent of the workload's files in RefreshSource every RefreshEvery (same bytes, new
// ETag), so that the Dataset's syncs copy them again and publish new generations.
type BenchRefresh struct {
	DuringRefresh bool
	// RefreshSource is the s3://BUCKET/PREFIX the data is a copy of (for s3:// data: the data itself).
	RefreshSource  string
	RefreshPercent int
	RefreshEvery   time.Duration
}

func (a *BenchRefresh) flags(l *flagList) {
	l.bool(&a.DuringRefresh, "during-refresh", "While the queries run, rewrite a share of the files they read in the bucket (same bytes, new ETag) so that syncs publish new generations; needs write access to the bucket (docs/benchruns.md).")
	l.str(&a.RefreshSource, "refresh-source", "", "With --during-refresh: the s3://BUCKET/PREFIX that --data is a copy of (default: --data when it is s3://); the workload's files are rewritten there, by their paths under --data.")
	l.int(&a.RefreshPercent, "refresh-percent", DefaultRefreshPercent, "With --during-refresh: the percentage of the workload's files rewritten each period (1-100).")
	l.duration(&a.RefreshEvery, "refresh-every", DefaultRefreshEvery, "With --during-refresh: the period of the rewrites (at least 1s).")
}

// A run measured during refreshes rewrites a quarter of its files every 30 s by default: several
// syncs over a TPC-H run, each with real copies to make.
const (
	DefaultRefreshPercent = 25
	DefaultRefreshEvery   = 30 * time.Second
)

// defaultBenchArgs are the arguments a runner applies to flags it was not given.
func defaultBenchArgs() BenchArgs {
	return BenchArgs{Engine: DefaultEngine, Workload: DefaultWorkload, Iterations: DefaultIterations, Warmups: DefaultWarmups,
		QueryTimeout: DefaultQueryTimeout, MemoryLimit: DefaultMemoryLimit, PolarsEngine: DefaultPolarsEngine, Isolation: DefaultIsolation, Streams: DefaultStreams,
		BenchRefresh: BenchRefresh{RefreshPercent: DefaultRefreshPercent, RefreshEvery: DefaultRefreshEvery}}
}

func (a *BenchArgs) flags() flagList {
	var l flagList
	d := defaultBenchArgs()
	l.str(&a.Engine, "engine", d.Engine, "Query engine: duckdb, polars or spark (built in), or command (any program).")
	l.strings(&a.CommandArgs, "command-arg", "The command engine's command, one argument per flag (keeps spaces); overrides --command.")
	l.int(&a.Threads, "threads", 0, "Engine threads per query: DuckDB's threads, Polars' POLARS_MAX_THREADS (0: one per CPU the process may use).")
	l.str(&a.MemoryLimit, "memory-limit", d.MemoryLimit, "With --engine duckdb: DuckDB's memory_limit: auto (a share of the container's cgroup memory limit, else DuckDB's default), none (DuckDB's default: 80% of the machine's RAM), or a size such as 2Gi.")
	l.strings(&a.DuckDBSettings, "duckdb-setting", "With --engine duckdb: a DuckDB setting for every query, NAME=VALUE (repeatable), e.g. prefetch_all_parquet_files=true.")
	l.str(&a.PolarsEngine, "polars-engine", d.PolarsEngine, "With --engine polars: Polars' engine, in-memory, streaming or auto.")
	l.bool(&a.PolarsForceAsync, "polars-force-async", "With --engine polars: POLARS_FORCE_ASYNC=1, the object-store reader for local files too.")
	l.str(&a.Workload, "workload", d.Workload, "The queries: a built-in workload (tpch, scan, paging) or a workload file, YAML or JSON (tables and named queries; see docs/bench.md).")
	l.str(&a.Data, "data", "", "The data the workload's tables are in: a directory, or s3://BUCKET/PREFIX.")
	l.str(&a.FreshData, "fresh-data", "", "With a built-in engine: a directory of freshly staged files (pqcache stage) that replace, under --fresh-prefix, the files in --data (Polars: or an s3:// URL).")
	l.commaStrings(&a.FreshPrefixes, "fresh-prefix", "Paths relative to --data (e.g. lineitem/batch=7/) read from --fresh-data instead (repeatable).")
	a.S3Access.flags(&l, "For s3:// data: ")
	l.str(&a.Queries, "queries", "", "The workload's queries to run, by name (q1,q6,q14); for tpch also numbers and ranges (1-22). Default: all.")
	l.int(&a.Iterations, "iterations", d.Iterations, "Measured runs per query (1-100).")
	l.count(&a.Warmups, "warmups", d.Warmups, "Unmeasured runs before them (0-10).")
	l.duration(&a.QueryTimeout, "query-timeout", d.QueryTimeout, "Bound on one run of one query; past it the query is recorded as Timeout.")
	l.str(&a.Isolation, "isolation", d.Isolation, "process (a fresh engine process per query per iteration: cold, as polars-benchmark runs) or session (one engine process per iteration runs every query in turn: warm, as an interactive user's session).")
	a.BenchRefresh.flags(&l)
	l.int(&a.Streams, "streams", d.Streams, "Query streams that run at once over the same data (1-16), each its own permutation of the queries, as TPC-H's throughput test: per-query p50/p95/p99 over every stream's executions, queries per hour, each stream's time.")
	l.int(&a.ProbeStreams, "probe-streams", 0, "Also measure the data's sequential read throughput with this many parallel streams, after the queries (0: no probe); for s3:// data, parallel GETs of the objects.")
	l.str(&a.Label, "label", "", "Name of this run in reports, e.g. \"2cpu-4gi / volume\".")
	l.str(&a.ConfigName, "config-name", "", "Name of the resource configuration in reports (e.g. 2cpu-4gi), which compare engines per configuration and input.")
	l.str(&a.IOType, "io-type", "", "How the data was read: the input's name in reports (default there: --data) and the io_type column of the CSV (default there: volume).")
	l.str(&a.ReportFile, "report-file", "", "Also write a compact summary (gzip+base64, at most 4 KiB) to this file, e.g. /dev/termination-log.")
	return l
}

// Bind registers the flags of `pqcache bench` with fs.
func (a *BenchArgs) Bind(fs FlagSet) { a.flags().bind(fs) }

// Args is the runner's command line: "bench" and the flags.
func (a BenchArgs) Args() []string {
	return append([]string{"bench"}, a.flags().render()...)
}
