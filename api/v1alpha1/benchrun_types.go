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

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pqcache/pqcache/api/wire"
)

// BenchRunSpec says which queries to run over which Dataset, with which engines, on which resource
// configurations and input paths: one Job per engine × configuration × input. A BenchRun records one
// run: its spec cannot change after creation.
// +kubebuilder:validation:XValidation:rule="size(self.engines) * size(self.configs) * size(self.inputs) <= 64",message="a run has at most 64 Jobs (engines × configs × inputs), so that its status fits in one object: split it into several BenchRuns"
// +kubebuilder:validation:XValidation:rule="!has(self.streams) || self.streams <= 1 || size(self.engines) * size(self.configs) * size(self.inputs) <= 32",message="a run with streams has at most 32 Jobs (engines × configs × inputs), so that its status fits each query's percentiles: split it into several BenchRuns"
type BenchRunSpec struct {
	// datasetRef names the Dataset, in the same namespace, whose data the queries read. The run
	// waits until it is Ready.
	// +required
	DatasetRef DatasetReference `json:"datasetRef"`

	// workload is what the queries are: a built-in workload (tpch, the default, scan or paging), or
	// your own queries over the Dataset's tables, from a ConfigMap or written here.
	// +optional
	Workload *BenchWorkload `json:"workload,omitempty"`

	// queries names the workload's queries to run, in this order (TPC-H's are q1 to q22). Empty runs
	// all of them. A run has at most 32 queries: its results travel in a termination message.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	Queries []string `json:"queries,omitempty"`

	// engines run the queries, each on every configuration × input, so that one run compares them
	// on the same data: duckdb (built into the pqcache image), polars (pqcache's Polars image) and any
	// command engine (any image). Engines that cannot read an input (duckdb and the s3 inputs) skip it.
	// +optional
	// +listType=atomic
	// +kubebuilder:default={{name: duckdb}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, (has(f.label) ? f.label : f.name) == (has(e.label) ? e.label : e.name)))",message="engines must be told apart: give each command engine (and any repeated engine) a distinct label"
	Engines []BenchEngine `json:"engines,omitempty"`

	// inputs lists the paths the queries read their data from; each is measured separately.
	// +optional
	// +listType=atomic
	// +kubebuilder:default={{type: volume}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(i, self.exists_one(j, j == i))",message="inputs must not repeat: each input path is measured once per configuration"
	Inputs []BenchInput `json:"inputs,omitempty"`

	// configs lists the resource configurations to measure; each runs every input in its own Job
	// with requests equal to limits.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=12
	Configs []ResourceConfig `json:"configs"`

	// iterations is how many measured runs each query gets; status reports their median, min and max.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Iterations int32 `json:"iterations,omitempty"`

	// warmups is how many unmeasured runs precede the measured ones, to warm caches.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Warmups *int32 `json:"warmups,omitempty"`

	// queryTimeout bounds one run of one query, e.g. "90s" or "30m"; a query past it is recorded as
	// Timeout and the run goes on with the next.
	//
	// The durations of a BenchRun are strings kept as written (not metav1.Duration, which clients
	// re-format as "30m0s"), so that an unchanged spec stays equal to itself under the rule that makes
	// it immutable.
	// +optional
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="queryTimeout must be a duration of at least 1s, e.g. 90s or 30m"
	QueryTimeout string `json:"queryTimeout,omitempty"`

	// timeout bounds the whole run, e.g. "2h"; Jobs still running then are stopped and the run fails
	// with reason Timeout.
	// +optional
	// +kubebuilder:default="6h"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="timeout must be a duration of at least 1m, e.g. 2h"
	Timeout string `json:"timeout,omitempty"`

	// nodeSelector places the query pods, e.g. in the zone of the bucket.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// affinity places the query pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations let the query pods run on tainted nodes.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// exclusive gives each of the run's query Jobs a node to itself while it runs (when true): no other
	// pqcache bench Job is admitted there, pqcache's sync Jobs are kept off it, and the Job itself
	// starts only on a node without them, so that nothing of pqcache's but the node agent shares its
	// CPUs, memory and disk. It costs waiting: a Job may queue until a node is free, and syncs of
	// Datasets whose volume lives on that node wait for the Job to end. The node agent (a DaemonSet)
	// stays, and keeps syncing that node's per-node copies. Default false.
	// +optional
	// +kubebuilder:default=false
	Exclusive bool `json:"exclusive,omitempty"`

	// pricing turns resource use into an estimated cost per configuration, and the cost of filling the
	// cache into the number of runs after which it pays for itself. Every price it leaves out comes
	// from the operator's prices file (the chart's prices ConfigMap, docs/benchruns.md), whose shipped
	// values are AWS list prices, so a run without it is priced too. The prices the run used are in
	// status.pricing.
	// +optional
	// +kubebuilder:default={}
	Pricing *Pricing `json:"pricing,omitempty"`

	// runsPerDay is how often you would run this workload: with it, each result that reads the cache
	// gets its break-even in days, counting the cache's storage and refreshes over those days.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	RunsPerDay *int32 `json:"runsPerDay,omitempty"`

	// Under load (issue 37).

	// streams is how many query streams each Job runs at once over the same input, each its own
	// permutation of the queries (stream 0 the workload's order, the others seeded by their number),
	// as TPC-H's throughput test does. Each query's status then gives p50, p95 and p99 over every
	// stream's executions, and each result its queries per hour and each stream's time. 1 runs the
	// queries alone (status then has no percentiles: the runner's JSON does). A run with streams has
	// at most 32 Jobs, half the usual, so that its status holds the percentiles.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 16",message="streams must be 1 to 16 concurrent query streams"
	Streams int32 `json:"streams,omitempty"`

	// Under refresh (issue 37): duringRefresh and its tuning.

	// duringRefresh runs the queries while the Dataset is being refreshed: each Job rewrites a share
	// of the files its queries read in the Dataset's bucket (the same bytes, so a new ETag and
	// LastModified and unchanged digests), and syncs copy them again and publish new generations
	// while the queries run. It needs credentials that may write to the bucket (s3:PutObject, multipart
	// upload and part copy on the prefix: docs/benchruns.md); a Job whose rewrites are refused fails the run with reason
	// RefreshRefused. Every query still reads one whole generation: the one the run pinned.
	// +optional
	DuringRefresh bool `json:"duringRefresh,omitempty"`

	// refresh tunes duringRefresh: how much to rewrite, how often.
	// +optional
	Refresh *BenchRefresh `json:"refresh,omitempty"`

	// serviceAccountName runs the run's query pods as this ServiceAccount of the namespace, e.g. the
	// one whose cloud role (IRSA, Pod Identity, Workload Identity) reads the Dataset's bucket, for
	// inputs that read S3. Unset, they run as pqcache's own worker account (or the namespace's
	// default), with no API token and no cloud identity of the Dataset's. Only a user who may create
	// pods in the namespace may set it (the chart's ValidatingAdmissionPolicy pqcache-benchrun-pods),
	// since a pod may run as any account of its namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="serviceAccountName must be a valid Kubernetes object name (lowercase letters, digits, '-' and '.')"
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// BenchRefresh says how a run with duringRefresh keeps its Dataset changing.
// +kubebuilder:validation:MinProperties=1
type BenchRefresh struct {
	// percent of the files a Job's queries read that it rewrites each period (1-100, default 25).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percent *int32 `json:"percent,omitempty"`

	// every is the period of the rewrites, and of the refreshes the controller asks the Dataset for
	// when no event source brings them (default 30s).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="refresh.every must be a duration of at least 1s, e.g. 30s"
	Every string `json:"every,omitempty"`
}

// DatasetReference names a Dataset in the same namespace.
type DatasetReference struct {
	// name of the Dataset.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Built-in workloads.
const (
	WorkloadTPCH   = "tpch"
	WorkloadScan   = "scan"
	WorkloadPaging = "paging"
)

// BenchWorkload is what a run's queries are: exactly one of a built-in workload, a ConfigMap and an
// inline workload.
// +kubebuilder:validation:XValidation:rule="(has(self.builtin) ? 1 : 0) + (has(self.configMapRef) ? 1 : 0) + (has(self.inline) ? 1 : 0) == 1",message="workload takes exactly one of builtin, configMapRef and inline"
type BenchWorkload struct {
	// builtin names a workload pqcache ships: tpch (the 22 PDS-H queries over the TPC-H tables), scan
	// (projection, filters and counts over lineitem as one big file and many small ones) or paging
	// (pages of one large file by LIMIT/OFFSET and by row number); `pqcache datagen` writes their
	// data (--layout scan for scan and paging).
	// +optional
	// +kubebuilder:validation:Enum=tpch;scan;paging
	Builtin string `json:"builtin,omitempty"`

	// configMapRef names a ConfigMap in the BenchRun's namespace holding the workload as YAML or
	// JSON, in the form of inline, under key (default workload.yaml). The run reads it when it
	// starts; later changes to it do not change the run.
	// +optional
	ConfigMapRef *WorkloadConfigMapRef `json:"configMapRef,omitempty"`

	// inline is the workload itself.
	// +optional
	Inline *InlineWorkload `json:"inline,omitempty"`
}

// WorkloadConfigMapRef names the ConfigMap key that holds a workload.
type WorkloadConfigMapRef struct {
	// name of the ConfigMap, in the BenchRun's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key holding the workload (default workload.yaml).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// InlineWorkload is a workload written in the BenchRun: named queries over named tables of the
// Dataset.
type InlineWorkload struct {
	// name names the workload in reports.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// tables map the names the queries use to paths of the Dataset.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Tables []WorkloadTable `json:"tables"`

	// queries run in this order.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(q, self.exists_one(p, p.name == q.name))",message="two queries share a name: query names must be unique"
	Queries []WorkloadQuery `json:"queries"`
}

// WorkloadTable is where one table's Parquet files are in the Dataset.
type WorkloadTable struct {
	// name is how the queries call the table: a SQL identifier.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// path is relative to the Dataset's root: a file (dim/customers.parquet), a folder (events: every
	// *.parquet under it, or events.parquet if that file exists) or a glob (events/**/*.parquet).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="path is relative to the Dataset's root and stays under it: no leading / and no .."
	Path string `json:"path"`

	// hive reads key=value directories on the files' paths (date=2026-12-03/) as columns.
	// +optional
	Hive bool `json:"hive,omitempty"`

	// fileRowNumber adds the column file_row_number, each row's position in its file.
	// +optional
	FileRowNumber bool `json:"fileRowNumber,omitempty"`
}

// WorkloadQuery is one named query.
// +kubebuilder:validation:XValidation:rule="has(self.sql) || has(self.polars)",message="a query needs sql (and may add a polars form)"
type WorkloadQuery struct {
	// name identifies the query in status and reports.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	Name string `json:"name"`

	// sql reads the tables by name; DuckDB runs it, and Polars through its SQL interface unless the
	// query has a polars form.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="sql is empty"
	SQL string `json:"sql,omitempty"`

	// polars is the query as a Polars user writes it: Python defining query(t), where t maps each
	// table name to a polars.LazyFrame, returning a LazyFrame (pl, date, datetime and timedelta are
	// imported). Engine polars runs it instead of the sql.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Polars string `json:"polars,omitempty"`
}

// EngineName names a query engine.
// +kubebuilder:validation:Enum=duckdb;polars;command;spark
type EngineName string

const (
	// EngineDuckDB is the DuckDB engine built into the pqcache binary.
	EngineDuckDB EngineName = "duckdb"
	// EnginePolars is Python Polars in pqcache's Polars image: a query's Polars form in its lazy API
	// when the workload gives one (TPC-H's do), else its SQL through Polars' SQL interface; it reads
	// the volume and S3.
	EnginePolars EngineName = "polars"
	// EngineSpark is PySpark in pqcache's Spark image: the query's SQL, every query of an iteration in
	// one Spark application (isolation session only); it reads the volume and S3 (s3a://). On
	// Kubernetes the Job is the driver (client mode) and Spark's Kubernetes scheduler starts
	// spec.engines[].executors executor pods.
	EngineSpark EngineName = "spark"
	// EngineCommand runs a command from any image once per query.
	EngineCommand EngineName = "command"
)

// DuckDBSetting is one DuckDB setting, as its SET statement takes it.
type DuckDBSetting struct {
	// name is one of DuckDB's remote-read knobs: threads (by default the configuration's CPUs; DuckDB's
	// httpfs blocks a thread per request, so more threads than CPUs overlap round trips to a bucket),
	// disable_parquet_prefetching and prefetch_all_parquet_files (prefetching), http_keep_alive,
	// http_timeout, http_retries, httpfs_connection_caching (HTTP), enable_external_file_cache,
	// parquet_metadata_cache and enable_http_metadata_cache (caching).
	// +required
	// +kubebuilder:validation:Enum=threads;disable_parquet_prefetching;prefetch_all_parquet_files;http_keep_alive;http_timeout;http_retries;httpfs_connection_caching;enable_external_file_cache;parquet_metadata_cache;enable_http_metadata_cache
	Name string `json:"name"`
	// value is a number, true or false.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(true|false|[0-9]+)$`
	Value string `json:"value"`
}

// BenchEngine is one query engine of a run.
// +kubebuilder:validation:XValidation:rule="self.name != 'command' || (has(self.image) && has(self.command))",message="engine command needs image and command: the command runs once per query, with {query}, {data} and {workload} replaced by the query's name, the data directory and the workload file"
// +kubebuilder:validation:XValidation:rule="self.name == 'command' || (!has(self.image) && !has(self.command))",message="engines duckdb, polars and spark are built in (the operator's images): remove image and command, or set name: command to run another engine"
// +kubebuilder:validation:XValidation:rule="self.name == 'polars' || (!has(self.polarsEngine) && !has(self.forceAsync))",message="polarsEngine and forceAsync apply to engine polars only"
// +kubebuilder:validation:XValidation:rule="self.name == 'duckdb' || !has(self.settings)",message="settings are DuckDB's, for engine duckdb only"
// +kubebuilder:validation:XValidation:rule="self.name == 'duckdb' || !has(self.memoryLimit)",message="memoryLimit applies to engine duckdb only (Polars has no memory limit of its own)"
// +kubebuilder:validation:XValidation:rule="self.name == 'spark' || (!has(self.executors) && !has(self.executorResources))",message="executors and executorResources apply to engine spark only: the other engines run in the Job's one pod"
// +kubebuilder:validation:XValidation:rule="self.name != 'spark' || !has(self.isolation) || self.isolation == 'session'",message="engine spark runs every query of an iteration in one Spark application (isolation session, its default): process isolation would time a JVM and an application start per query"
type BenchEngine struct {
	// name is duckdb (default), polars, spark or command.
	// +optional
	// +kubebuilder:default=duckdb
	Name EngineName `json:"name,omitempty"`

	// label names the engine in status, reports and Job names; by default its name. Two command engines
	// (or one engine twice, e.g. polars with and without streaming) need labels to be told apart.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="engine label must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Label string `json:"label,omitempty"`

	// polarsEngine is the Polars engine that runs the queries (polars only): in-memory (default),
	// streaming, or auto (Polars chooses).
	// +optional
	// +kubebuilder:validation:Enum=in-memory;streaming;auto
	PolarsEngine string `json:"polarsEngine,omitempty"`

	// forceAsync sets POLARS_FORCE_ASYNC=1 (polars only): Polars' async, object-store reader for
	// files on the volume too, as it reads s3://.
	// +optional
	ForceAsync *bool `json:"forceAsync,omitempty"`

	// settings are DuckDB settings for every query (duckdb only): its remote-read knobs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Settings []DuckDBSetting `json:"settings,omitempty"`

	// memoryLimit is DuckDB's memory_limit (duckdb only): Auto (default) sets it to 3/4 of the
	// configuration's memory limit less 24Mi, so a query too big for the configuration spills or
	// fails with DuckDB's own out-of-memory error; None leaves DuckDB's default (80% of the node's
	// memory), so such a query is OOM-killed by the kernel, as most engines would be; or a size such
	// as 512Mi.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == 'Auto' || self == 'None' || isQuantity(self)",message="memoryLimit must be Auto, None or a size such as 512Mi"
	MemoryLimit string `json:"memoryLimit,omitempty"`

	// image is the container image of a command engine. pqcache injects its own binary into the pod
	// to time and measure the command, so the image needs nothing from pqcache.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`

	// command runs one query of a command engine; "{query}", "{data}" and "{workload}" in any argument
	// are replaced by the query's name, the data directory and the resolved workload file (JSON: each
	// table's files and each query's SQL; see docs/bench.md).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Command []string `json:"command,omitempty"`

	// env adds environment variables to the engine's container (for Polars, e.g. POLARS_FORCE_ASYNC):
	// values, or references to a ConfigMap (configMapKeyRef) or to the pod's own fields (fieldRef,
	// resourceFieldRef). A reference to a Secret is refused: a BenchRun must not read what its creator
	// may not, and a command engine would print it. The engine gets the bucket's credentials from the
	// Dataset's Secret (spec.source.s3.credentials.secretRef) as the standard AWS variables, for inputs
	// that read S3.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef))",message="env may not reference a Secret (valueFrom.secretKeyRef): give values or configMapKeyRef; for S3 the engine gets the Dataset's own credentials (spec.source.s3.credentials.secretRef) as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// isolation is how the engine's queries share processes (docs/bench.md, "Isolation"): process
	// (the default of duckdb, polars and command) starts a fresh engine process per query and
	// iteration, cold, as polars-benchmark does; session runs every query of an iteration in one process, in turn, warm, as an interactive
	// user and DuckDB's own benchmark runner do. Per engine, so that one run compares both on the
	// same data: list the engine twice with distinct labels. A command engine runs sessions when its
	// command takes {queries}; without it the run is refused (Unsupported) before any Job. Spark
	// runs session only (its default): one Spark application per iteration. Unset, the engine's
	// default applies; the results say which ran.
	// +optional
	Isolation BenchIsolation `json:"isolation,omitempty"`

	// executors is how many executor pods Spark starts (spark only, 1 to 64, default 2), each from
	// the Spark image, spread over the nodes; the configuration's cpu and memory are the driver's.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 64",message="executors must be 1 to 64 executor pods"
	Executors *int32 `json:"executors,omitempty"`

	// executorResources are each executor pod's CPU and memory (spark only); by default those of
	// the configuration the Job runs, like the driver's.
	// +optional
	ExecutorResources *ExecutorResources `json:"executorResources,omitempty"`
}

// ExecutorResources are one Spark executor pod's requests and limits. Requests left out equal the
// limits; a limit left out is the request.
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.cpuRequest) || !has(self.cpuLimit) || quantity(string(self.cpuRequest)).compareTo(quantity(string(self.cpuLimit))) <= 0",message="executorResources.cpuRequest must not exceed cpuLimit"
// +kubebuilder:validation:XValidation:rule="!has(self.memoryRequest) || !has(self.memoryLimit) || quantity(string(self.memoryRequest)).compareTo(quantity(string(self.memoryLimit))) <= 0",message="executorResources.memoryRequest must not exceed memoryLimit"
type ExecutorResources struct {
	// cpuRequest is each executor's CPU request, e.g. "1" or "500m".
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="executorResources.cpuRequest must be a CPU amount above zero, such as 1 or 500m"
	CPURequest *resource.Quantity `json:"cpuRequest,omitempty"`
	// cpuLimit is each executor's CPU limit; Spark runs that many task threads (rounded up).
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="executorResources.cpuLimit must be a CPU amount above zero, such as 2 or 1500m"
	CPULimit *resource.Quantity `json:"cpuLimit,omitempty"`
	// memoryRequest is each executor's memory request, e.g. "2Gi".
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('512Mi')) >= 0",message="executorResources.memoryRequest must be a size of at least 512Mi (a JVM with Spark needs it), such as 2Gi"
	MemoryRequest *resource.Quantity `json:"memoryRequest,omitempty"`
	// memoryLimit is each executor's memory limit: the JVM's heap is sized under it, and an executor
	// past it is OOM-killed, which fails the query that ran on it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('512Mi')) >= 0",message="executorResources.memoryLimit must be a size of at least 512Mi (a JVM with Spark needs it), such as 4Gi"
	MemoryLimit *resource.Quantity `json:"memoryLimit,omitempty"`
}

// BenchIsolation is how a bench Job's queries share engine processes.
// +kubebuilder:validation:Enum=process;session
type BenchIsolation string

// Isolations; they match the runner's --isolation (wire.IsolationProcess, wire.IsolationSession).
const (
	IsolationProcess BenchIsolation = wire.IsolationProcess
	IsolationSession BenchIsolation = wire.IsolationSession
)

// InputType is a path from which queries read their data.
// +kubebuilder:validation:Enum=volume;mixed-staged;mixed-direct;s3;claim;endpoint
type InputType string

const (
	// InputVolume reads every table from the Dataset's volume.
	InputVolume InputType = "volume"
	// InputMixedStaged reads static tables from the volume and first stages the Dataset's fresh
	// prefixes, timing the staging separately.
	InputMixedStaged InputType = "mixed-staged"
	// InputMixedDirect reads static tables from the volume and the fresh prefixes straight from S3.
	InputMixedDirect InputType = "mixed-direct"
	// InputS3 reads every table straight from S3.
	InputS3 InputType = "s3"
	// InputClaim reads every table from another PersistentVolumeClaim, such as a bucket mount.
	InputClaim InputType = "claim"
	// InputEndpoint reads every table by its s3:// URL through the node's S3 endpoint for readers,
	// from the node's copy of a Dataset with spec.replicas: what a reader that only changes its
	// endpoint gets.
	InputEndpoint InputType = "endpoint"
)

// BenchInput is one input path to measure.
// +kubebuilder:validation:XValidation:rule="self.type == 'claim' ? has(self.claimName) : !has(self.claimName)",message="claimName is required for type claim and only allowed with it"
type BenchInput struct {
	// type is volume, mixed-staged, mixed-direct, s3, claim or endpoint.
	// +required
	Type InputType `json:"type"`

	// claimName is the PersistentVolumeClaim read by a claim input, e.g. one backed by the
	// Mountpoint for S3 CSI driver, to compare the cache with the mount in use today.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="claimName must be a valid Kubernetes object name (lowercase letters, digits, '-' and '.')"
	ClaimName string `json:"claimName,omitempty"`
}

// ResourceConfig is one resource configuration: the query pod's requests and limits.
type ResourceConfig struct {
	// name identifies the configuration in status and in Job names, e.g. "4cpu-16gi".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="config name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// cpu is the pod's CPU request and limit, e.g. "2" or "1500m".
	// +required
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",message="cpu must be a Kubernetes quantity, a CPU amount such as 2 or 1500m"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="cpu must be greater than zero"
	CPU resource.Quantity `json:"cpu"`

	// memory is the pod's memory request and limit, e.g. "8Gi". A query that needs more is
	// reported as OOMKilled.
	// +required
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",message="memory must be a Kubernetes quantity, a size such as 8Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('64Mi')) >= 0",message="memory must be at least 64Mi"
	Memory resource.Quantity `json:"memory"`
}

// Pricing gives unit prices, as decimal strings in one currency, to estimate what a run and its cache
// cost. A price left out comes from the operator's prices file (--prices-file, the chart's prices
// ConfigMap), and without one from pqcache's built-in copy of the same list prices: AWS's published
// on-demand prices in us-east-1 (docs/benchruns.md gives the pages): Fargate's Linux/x86 $0.04048 per
// vCPU-hour and $0.004445 per GB-hour, per second, S3's data transfer out to the internet, $0.09 per
// GB, S3 Standard GET $0.0004 and LIST $0.005 per 1000 requests, EBS gp3 $0.08 per GB-month. A
// cluster in the bucket's own region pays no transfer: set transferGB to "0". The API server fills no
// price in (objects created before the prices file existed keep the ones it filled then).
type Pricing struct {
	// coreSecond is the price of one CPU core for one second.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.0000117\""
	CoreSecond string `json:"coreSecond,omitempty"`

	// gibSecond is the price of one GiB of memory for one second.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.0000013\""
	GiBSecond string `json:"gibSecond,omitempty"`

	// transferGB is the price of reading one GB (10^9 bytes) from the bucket.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.02\""
	TransferGB string `json:"transferGB,omitempty"`

	// placementMultiplier scales the compute prices for the chosen placement (e.g. "0.35" for spot).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="placementMultiplier is a non-negative decimal number such as \"1\" or \"0.35\""
	PlacementMultiplier string `json:"placementMultiplier,omitempty"`

	// currency is the ISO 4217 code of the prices, for the reports.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	Currency string `json:"currency,omitempty"`
	// storageGBMonth is the price of keeping one GB (10^9 bytes) of the cache for a month (730 hours),
	// whatever the claim's StorageClass; left out, the prices file's price for that class (or for
	// node disks, with spec.replicas) applies.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.08\""
	StorageGBMonth string `json:"storageGBMonth,omitempty"`

	// getPer1000 is the price of 1000 GET requests to the bucket.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.0004\""
	GetPer1000 string `json:"getPer1000,omitempty"`

	// listPer1000 is the price of 1000 LIST requests to the bucket.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')",message="prices are non-negative decimal numbers such as \"0.005\""
	ListPer1000 string `json:"listPer1000,omitempty"`
}

// BenchRunStatus is what the run measured: one summary per configuration × input and per query
// (per-iteration times stay in the Job's output, `pqcache bench --json`). Each Job's result is recorded
// once, when the Job finishes; after that the Job may be deleted or garbage-collected without
// changing anything.
type BenchRunStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Succeeded, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// startTime is when the first Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the last Job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// durationMillis is the run's wall time, from startTime to completionTime (or to now while running).
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`

	// duration is durationMillis for people ("1m23s"), for kubectl get.
	// +optional
	Duration string `json:"duration,omitempty"`

	// shape is the run's size as engines × configs × inputs ("2×1×4"), for kubectl get.
	// +optional
	Shape string `json:"shape,omitempty"`

	// datasetDigest is the manifest digest of the Dataset the queries read, for reproducibility.
	// +optional
	DatasetDigest string `json:"datasetDigest,omitempty"`

	// datasetGeneration is the generation of the Dataset's data every Job of the run reads, whatever
	// refreshes happen meanwhile: the Dataset keeps it on the volume until the run has finished.
	// +optional
	DatasetGeneration int64 `json:"datasetGeneration,omitempty"`

	// refresh is, for a run with duringRefresh, how the Dataset moved while the Jobs ran.
	// +optional
	Refresh *BenchRefreshStatus `json:"refresh,omitempty"`

	// workload names the workload the run reads (tpch, scan, paging, or yours), once it started.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Workload string `json:"workload,omitempty"`

	// queries is the number of queries each Job runs.
	// +optional
	Queries int32 `json:"queries,omitempty"`

	// jobs counts the run's Jobs by state.
	// +optional
	Jobs *JobCounts `json:"jobs,omitempty"`

	// progress is a short human summary such as "3/8 jobs".
	// +optional
	Progress string `json:"progress,omitempty"`

	// results holds one entry per engine × configuration × input whose Job was started: with startTime while
	// the Job runs, and its measurements and completionTime once they are recorded.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Results []BenchResult `json:"results,omitempty"`

	// breakEvenRuns is, for the first engine × configuration measured on both the volume and s3, the
	// number of runs after which caching costs less than reading from S3 (each volume result carries
	// its own).
	// +optional
	BreakEvenRuns *int64 `json:"breakEvenRuns,omitempty"`

	// breakEvenDays is that result's break-even in days at spec.runsPerDay.
	// +optional
	BreakEvenDays *int64 `json:"breakEvenDays,omitempty"`

	// pricing is the prices the run used: spec.pricing over the operator's prices file.
	// +optional
	Pricing *Pricing `json:"pricing,omitempty"`
}

// JobCounts counts a BenchRun's Jobs.
type JobCounts struct {
	// total is the Jobs the run plans: engines × configs × inputs, less the engine × input pairs an
	// engine cannot read (duckdb and the s3 inputs).
	// +required
	Total int32 `json:"total"`
	// active Jobs are running.
	// +optional
	Active int32 `json:"active,omitempty"`
	// succeeded Jobs completed.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// failed Jobs failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// queued Jobs wait for a slot under the operator's cap on concurrent bench Jobs.
	// +optional
	Queued int32 `json:"queued,omitempty"`
}

// BenchResult summarises one engine × configuration × input.
type BenchResult struct {
	// engine is the engine's label (its name unless the spec gives a label).
	// +optional
	Engine string `json:"engine,omitempty"`
	// config is the ResourceConfig name.
	// +required
	Config string `json:"config"`
	// input is the input type, with the claim name for a claim input ("claim/mountpoint-s3").
	// +required
	Input string `json:"input"`
	// jobName is the Job that measured it.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// node is the node the Job's pod ran on.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
	// zone is that node's topology.kubernetes.io/zone label.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Zone string `json:"zone,omitempty"`
	// startTime is when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the Job's result was recorded; absent while it runs.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// reason says, as a word, why a Job has no measurements: MissingTables (the data lacks a table
	// of the workload) or InvalidWorkload.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// message says why a Job has no measurements (for example, it was deleted before it finished).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// wallMillis is the Job's wall time for all queries and iterations.
	// +optional
	WallMillis int64 `json:"wallMillis,omitempty"`
	// readBytesPerSecond is the input path's sequential read throughput, measured without an engine.
	// +optional
	ReadBytesPerSecond int64 `json:"readBytesPerSecond,omitempty"`
	// stagedBytes is what the mixed-staged input copied before the queries.
	// +optional
	StagedBytes int64 `json:"stagedBytes,omitempty"`
	// stageMillis is how long that copy took.
	// +optional
	StageMillis int64 `json:"stageMillis,omitempty"`
	// networkReadBytes is what the Job's pod received over the network while the queries ran, warm-ups
	// and every iteration included (its network namespace's counters): for the s3 and mixed-direct
	// inputs, the bytes read from the bucket, which the cost estimate charges.
	// +optional
	NetworkReadBytes int64 `json:"networkReadBytes,omitempty"`
	// geometricMeanMillis is the geometric mean of the successful queries' medians.
	// +optional
	GeometricMeanMillis int64 `json:"geometricMeanMillis,omitempty"`
	// failedQueries names the queries that did not succeed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	FailedQueries []string `json:"failedQueries,omitempty"`
	// costMicros is the estimated cost in millionths of the pricing currency.
	// +optional
	CostMicros *int64 `json:"costMicros,omitempty"`
	// breakEvenRuns is, on a volume result whose engine and configuration also ran on s3 at a higher
	// cost, the number of runs after which filling the cache has paid for itself; with spec.runsPerDay,
	// the cache's storage and refreshes over those runs' days count too.
	// +optional
	BreakEvenRuns *int64 `json:"breakEvenRuns,omitempty"`
	// breakEvenDays is, with spec.runsPerDay, breakEvenRuns in whole days at that rate (rounded up);
	// absent when the savings of a day's runs do not cover a day of storage and refreshes.
	// +optional
	BreakEvenDays *int64 `json:"breakEvenDays,omitempty"`
	// cache is what keeping the cache this input reads costs over time; absent for inputs that read
	// no cache (s3, a claim).
	// +optional
	Cache *CacheCost `json:"cache,omitempty"`
	// refresh is, with spec.duringRefresh, what the Job rewrote while its queries ran.
	// +optional
	Refresh *ResultRefresh `json:"refresh,omitempty"`
	// queries holds one summary per query.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Queries []QueryResult `json:"queries,omitempty"`

	// Under load (issue 37): spec.streams.

	// streams is how many query streams the Job ran at once.
	// +optional
	Streams int32 `json:"streams,omitempty"`
	// streamMillis is each stream's wall time, warm-ups included, in stream order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	StreamMillis []int64 `json:"streamMillis,omitempty"`
	// queriesPerHour is the Job's throughput: the query executions that succeeded in all streams,
	// warm-ups included, per hour of the streams' wall time.
	// +optional
	QueriesPerHour int64 `json:"queriesPerHour,omitempty"`

	// How the query times were taken (issue 37): the isolation, what the times measure, and the
	// start-up and whole-process figures beside them. Per result, not per query (each query has its
	// medianWallMillis), so that the largest status still fits in 1 MiB.

	// isolation is the engine's isolation, process or session, that the Job ran.
	// +optional
	Isolation BenchIsolation `json:"isolation,omitempty"`
	// timing says what the queries' medianMillis, minMillis and maxMillis and geometricMeanMillis
	// measure: engine (the engine's own time, from the call that runs the query to its last result
	// row; start-up excluded) for every query, or wall (the whole process's wall time, start-up and
	// writing the rows included) when the engine reported no time of its own for some query.
	// +optional
	Timing BenchTiming `json:"timing,omitempty"`
	// startupMillis is the engine's typical start-up, process start to its ready signal
	// (interpreter, import, connection, workload read): the median of the queries' median start-ups,
	// or in session isolation of the sessions'. Absent when the engine reports no ready signal.
	// +optional
	StartupMillis int64 `json:"startupMillis,omitempty"`
	// wallGeometricMeanMillis is the geometric mean of the successful queries' median whole-process
	// wall times (their medianWallMillis): what geometricMeanMillis was before engines reported
	// their own query time.
	// +optional
	WallGeometricMeanMillis int64 `json:"wallGeometricMeanMillis,omitempty"`

	// spark is, for the spark engine, what the driver and its executors used (issue 36): per result,
	// not per query nor per executor (each executor's peak is in the Job's summary, `pqcache bench
	// --json`), so that the largest status still fits in 1 MiB.
	// +optional
	Spark *SparkUsage `json:"spark,omitempty"`
}

// SparkUsage is what one Spark result's pods used: peak memory from each pod's cgroup, the bucket's
// bytes the executors read, and the compute that the cost of N executors charges.
type SparkUsage struct {
	// executors is how many executor pods each application asked for.
	// +optional
	Executors int32 `json:"executors,omitempty"`
	// driverPeakBytes is the driver's peak memory (its container's cgroup, the runner included).
	// +optional
	DriverPeakBytes int64 `json:"driverPeakBytes,omitempty"`
	// executorPeakMaxBytes is the largest executor's peak memory (its container's cgroup): the one
	// that decides whether executors of this size are OOM-killed.
	// +optional
	ExecutorPeakMaxBytes int64 `json:"executorPeakMaxBytes,omitempty"`
	// peakBytesSum is driverPeakBytes plus every executorPeakBytes: at most what the run held at once.
	// +optional
	PeakBytesSum int64 `json:"peakBytesSum,omitempty"`
	// s3ReadBytes is what all the executors read from the bucket, warm-ups included, as Spark's task
	// input metrics count it: 0 on volume, a lower bound on s3 (Parquet's vectored reads bypass the
	// counters; docs/bench.md).
	// +optional
	S3ReadBytes int64 `json:"s3ReadBytes,omitempty"`
	// executorSeconds is the executors' lives summed, each from its registration to its removal, over
	// every iteration's application.
	// +optional
	ExecutorSeconds int64 `json:"executorSeconds,omitempty"`
	// coreSeconds is the CPU the pods held, summed: the driver's cpu × the Job's wall time plus each
	// executor's cpu limit × its life.
	// +optional
	CoreSeconds int64 `json:"coreSeconds,omitempty"`
	// gibSeconds is the memory the pods held, summed likewise (GiB × seconds).
	// +optional
	GiBSeconds int64 `json:"gibSeconds,omitempty"`
}

// BenchTiming says what a result's query times measure.
// +kubebuilder:validation:Enum=engine;wall
type BenchTiming string

// Timing sources; they match the runner's (wire.TimingEngine, wire.TimingWall).
const (
	TimingEngine BenchTiming = wire.TimingEngine
	TimingWall   BenchTiming = wire.TimingWall
)

// BenchRefreshStatus is how a Dataset moved while a run with duringRefresh ran: generations published
// (lastGeneration > firstGeneration says syncs really happened beside the queries) and the
// refreshes the controller asked for.
type BenchRefreshStatus struct {
	// firstGeneration is the Dataset's generation when the run started (the one its Jobs read).
	// +optional
	FirstGeneration int64 `json:"firstGeneration,omitempty"`
	// lastGeneration is the newest generation the Dataset published while the run's Jobs ran.
	// +optional
	LastGeneration int64 `json:"lastGeneration,omitempty"`
	// generationsPublished is lastGeneration - firstGeneration.
	// +optional
	GenerationsPublished int64 `json:"generationsPublished,omitempty"`
	// requests counts the refreshes the controller asked the Dataset for (none when the Dataset's
	// event source brings the rewrites to it).
	// +optional
	Requests int32 `json:"requests,omitempty"`
	// lastRequestTime is when it last asked.
	// +optional
	LastRequestTime *metav1.Time `json:"lastRequestTime,omitempty"`
}

// ResultRefresh is what one Job with duringRefresh rewrote while its queries ran.
type ResultRefresh struct {
	// rewrites counts the files rewritten (each the same bytes with a new ETag).
	// +optional
	Rewrites int32 `json:"rewrites,omitempty"`
	// files is how many files the queries read, that the rewrites went through.
	// +optional
	Files int32 `json:"files,omitempty"`
	// readGeneration is the generation every query of the Job read (volume inputs).
	// +optional
	ReadGeneration int64 `json:"readGeneration,omitempty"`
	// firstGeneration is the newest generation on the volume when the queries started (volume
	// inputs).
	// +optional
	FirstGeneration int64 `json:"firstGeneration,omitempty"`
	// lastGeneration is the newest generation on the volume when the queries ended (volume inputs):
	// above firstGeneration, syncs published while they ran.
	// +optional
	LastGeneration int64 `json:"lastGeneration,omitempty"`
}

// CacheCost is what keeping a Dataset's cache costs over time: its storage, and its refreshes
// estimated from the Dataset's last sync times the syncs its schedule starts. Money is in millionths
// of the run's currency (status.pricing.currency).
type CacheCost struct {
	// storageClass is the StorageClass priced: the Dataset's claim's, "default" when it names none,
	// or "node-disk" for per-node copies (spec.replicas).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClass string `json:"storageClass,omitempty"`
	// copies is how many copies are stored: 1 for a claim, the desired per-node copies otherwise.
	// +optional
	Copies int32 `json:"copies,omitempty"`
	// storageBytes is the footprint: the manifest's bytes × copies.
	// +optional
	StorageBytes int64 `json:"storageBytes,omitempty"`
	// storageMicrosPerMonth is what storageBytes cost for a month (730 hours).
	// +optional
	StorageMicrosPerMonth *int64 `json:"storageMicrosPerMonth,omitempty"`
	// syncIntervalSeconds is the mean time between the syncs the Dataset's refresh schedule starts,
	// rounded (the costs use the exact rate); absent without a schedule, when refreshes cost nothing
	// here.
	// +optional
	SyncIntervalSeconds int64 `json:"syncIntervalSeconds,omitempty"`
	// refreshBytesPerDay is what the refreshes download from the bucket in a day: the last successful
	// sync's bytesCopied × syncs per day (after the first sync, the whole data set: an upper bound
	// until a refresh has run).
	// +optional
	RefreshBytesPerDay int64 `json:"refreshBytesPerDay,omitempty"`
	// transferMicrosPerDay is the price of refreshBytesPerDay.
	// +optional
	TransferMicrosPerDay *int64 `json:"transferMicrosPerDay,omitempty"`
	// computeMicrosPerDay is the sync worker's CPU and memory for the last sync's duration × syncs per
	// day.
	// +optional
	ComputeMicrosPerDay *int64 `json:"computeMicrosPerDay,omitempty"`
	// requestMicrosPerDay is the last sync's GET and LIST requests × syncs per day.
	// +optional
	RequestMicrosPerDay *int64 `json:"requestMicrosPerDay,omitempty"`
	// refreshMicrosPerDay is transfer, compute and requests together.
	// +optional
	RefreshMicrosPerDay *int64 `json:"refreshMicrosPerDay,omitempty"`
}

// QueryStatus is how one query ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Timeout;OOMKilled;NotRun
type QueryStatus string

// Query outcomes.
const (
	QuerySucceeded QueryStatus = "Succeeded"
	QueryFailed    QueryStatus = "Failed"
	QueryTimeout   QueryStatus = "Timeout"
	QueryOOMKilled QueryStatus = "OOMKilled"
	QueryNotRun    QueryStatus = "NotRun"
)

// QueryResult summarises one query's measured iterations.
type QueryResult struct {
	// name is the query's name in the workload (TPC-H: q1 to q22), or "*" for a Job whose runner
	// did not finish: it stands for every query, and its status says why.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// status is how the query ended.
	// +required
	Status QueryStatus `json:"status"`
	// The query's measured figures, from the runner's summary as they are.
	wire.QueryMeasurements `json:",inline"`
}

// BenchRun runs PDS-H queries over a Dataset for each resource configuration × input path and
// records per-query timings, peak memory and read throughput in its status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pqbr,categories=pqcache
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`
// +kubebuilder:printcolumn:name="Queries",type=integer,JSONPath=`.status.queries`
// +kubebuilder:printcolumn:name="Engines×Configs×Inputs",type=string,JSONPath=`.status.shape`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.duration`,description="Wall time"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`,priority=1
// +kubebuilder:printcolumn:name="Dataset",type=string,JSONPath=`.spec.datasetRef.name`,priority=1
// +kubebuilder:printcolumn:name="Configs",type=string,JSONPath=`.spec.configs[*].name`,priority=1
type BenchRun struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is what to run. It cannot change after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a BenchRun records one run and its spec cannot change: create a new BenchRun to run again"
	// +kubebuilder:validation:XValidation:rule="!has(self.refresh) || (has(self.duringRefresh) && self.duringRefresh)",message="refresh tunes duringRefresh: set duringRefresh: true, or remove refresh"
	Spec BenchRunSpec `json:"spec"`

	// status is what the run measured.
	// +optional
	Status BenchRunStatus `json:"status,omitzero"`
}

// BenchRunList is a list of BenchRuns.
// +kubebuilder:object:root=true
type BenchRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []BenchRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(register(&BenchRun{}, &BenchRunList{}))
}
