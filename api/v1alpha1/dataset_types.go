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
)

// DatasetSpec says which S3 objects to mirror, onto which volume, and when to refresh them.
// +kubebuilder:validation:XValidation:rule="!has(self.source.table) || (!has(self.include) && !has(self.exclude))",message="a table Dataset copies whole committed versions: include and exclude would publish a version nobody committed"
// +kubebuilder:validation:XValidation:rule="!has(self.source.table) || !has(self.sync) || !has(self.sync.keepGenerations) || self.sync.keepGenerations > 0",message="a table Dataset keeps at least one generation (spec.sync.keepGenerations): its readers read whole versions, never the files a sync is replacing"
// +kubebuilder:validation:XValidation:rule="!has(self.source.table) || !has(self.fresh)",message="a table Dataset has no fresh prefixes to stage apart: its versions are copied whole, each one committed"
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="spec.replicas cannot be added or removed after creation: a Dataset is one claim or one copy per node; create another Dataset"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.volume) || (!has(self.volume.existingClaim) && !has(self.volume.capacity) && !has(self.volume.storageClassName))",message="spec.volume applies to a Dataset on one claim: with spec.replicas each copy lives in its node agent's cache root"
type DatasetSpec struct {
	// source is the object store prefix to mirror.
	// +required
	Source DatasetSource `json:"source"`

	// include lists globs, relative to source.s3.prefix, of the keys to mirror ("**" matches any
	// number of path segments, e.g. "lineitem/**/*.parquet"). Empty means every key under the prefix.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	Include []string `json:"include,omitempty"`

	// exclude lists globs, relative to source.s3.prefix, of keys to leave out even when include
	// matches them (e.g. "**/_SUCCESS").
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	Exclude []string `json:"exclude,omitempty"`

	// volume says which PersistentVolumeClaim holds the cache: one pqcache creates and owns, or an
	// existing claim.
	// +optional
	// +kubebuilder:default={}
	Volume DatasetVolume `json:"volume,omitzero"`

	// refresh says when the cache is brought up to date with the bucket.
	// +optional
	// +kubebuilder:default={}
	Refresh RefreshPolicy `json:"refresh,omitzero"`

	// fresh lists sub-prefixes of source.s3.prefix that hold the newest, never-cached data (for
	// example "orders/date=2026-12-02/"). Benchmarks with the mixed-staged input stage them just
	// before the queries run instead of reading them from the volume.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(p, !p.startsWith('/'))",message="fresh prefixes are relative to source.s3.prefix and must not start with '/'"
	Fresh []string `json:"fresh,omitempty"`

	// sync tunes the worker that copies the data.
	// +optional
	// +kubebuilder:default={}
	Sync SyncOptions `json:"sync,omitzero"`

	// replicas keeps, when set, a copy on the local disk of each chosen node instead of one claim: the
	// node agents sync and serve them (see "Copies on every node" in docs/datasets.md). It is set at
	// creation and stays: a Dataset is one claim or one copy per node.
	// +optional
	Replicas *ReplicaPolicy `json:"replicas,omitempty"`
}

// DatasetSource is where a Dataset's objects live. S3 is the only kind today; the struct leaves room
// for others without breaking the API.
// +kubebuilder:validation:XValidation:rule="!has(self.table) || !has(self.s3.prefix) || size(self.s3.prefix) == 0 || self.s3.prefix.endsWith('/')",message="source.s3.prefix of a table is the table's root folder and ends with '/' (write \"tables/orders/\", not \"tables/orders\")"
type DatasetSource struct {
	// s3 is an S3 bucket and prefix, on AWS or any S3-compatible store.
	// +required
	S3 S3Source `json:"s3"`

	// table says that s3.prefix is the root of a table, and in which format: each sync copies exactly
	// the files of the table's newest committed version (its log from the last checkpoint, its live
	// data files), never a writer's uncommitted files or older versions' files, and each generation is
	// one committed version, which lastSync.tableVersion names. Omitted, the prefix is mirrored as it is
	// listed.
	// +optional
	Table *TableSource `json:"table,omitempty"`
}

// TableSource names the format of a table Dataset.
type TableSource struct {
	// format is the table's format: Delta (Delta Lake, whose root holds _delta_log/; reader protocol
	// up to 3, with deletion vectors, classic and multi-part checkpoints; not v2 checkpoints).
	// +required
	Format TableFormat `json:"format"`
}

// TableFormat is a table format a Dataset reads.
// +kubebuilder:validation:Enum=Delta
type TableFormat string

// The table formats.
const (
	TableDelta TableFormat = "Delta"
)

// S3Source is a bucket prefix on AWS S3 or an S3-compatible store.
type S3Source struct {
	// bucket is the bucket name. It cannot change once set: a Dataset mirrors one bucket.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9][a-z0-9.-]*[a-z0-9]$') && !self.contains('..')",message="bucket must be a valid S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bucket is immutable: create a new Dataset to mirror another bucket"
	Bucket string `json:"bucket"`

	// prefix is the key prefix to mirror, without a leading slash ("tpch/sf100/"). Empty mirrors the
	// whole bucket. Changing it re-plans the cache on the next reconcile.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="prefix must not start with '/': S3 keys have no leading slash (write \"tables/\", not \"/tables/\")"
	Prefix string `json:"prefix,omitempty"`

	// region is the bucket's region (e.g. "eu-west-1"). Empty uses the worker's AWS configuration,
	// or "us-east-1" for S3-compatible stores that ignore regions.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9-]+$')",message="region must be lowercase letters, digits and hyphens, e.g. eu-west-1"
	Region string `json:"region,omitempty"`

	// endpoint is the URL of an S3-compatible store (e.g. "https://minio.storage.svc:9000"). Empty
	// uses AWS S3.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="endpoint must be an http:// or https:// URL with a host, e.g. https://s3.eu-west-1.amazonaws.com"
	Endpoint string `json:"endpoint,omitempty"`

	// forcePathStyle addresses the bucket as endpoint/bucket/key instead of bucket.endpoint/key.
	// Most S3-compatible stores need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// credentials says how the worker authenticates. Omitted, the worker uses the default AWS chain
	// of its pod (environment, node role).
	// +optional
	Credentials *S3Credentials `json:"credentials,omitempty"`
}

// S3Credentials names exactly one source of credentials for the worker pods.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.serviceAccountName)",message="credentials must set exactly one of secretRef or serviceAccountName"
type S3Credentials struct {
	// secretRef names a Secret in the Dataset's namespace whose keys become the worker's environment:
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (required), AWS_SESSION_TOKEN (optional).
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// serviceAccountName runs the worker pods as this ServiceAccount, for IRSA, EKS Pod Identity or
	// another web-identity federation bound to it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="serviceAccountName must be a valid Kubernetes object name (lowercase letters, digits, '-' and '.')"
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// SecretReference names a Secret in the same namespace.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReclaimPolicy says what happens to a claim pqcache created when its Dataset is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type ReclaimPolicy string

const (
	// ReclaimDelete deletes the claim with the Dataset (through its owner reference).
	ReclaimDelete ReclaimPolicy = "Delete"
	// ReclaimRetain keeps the claim, and the cached data, after the Dataset is deleted.
	ReclaimRetain ReclaimPolicy = "Retain"
)

// DatasetVolume is the PersistentVolumeClaim that holds the cache.
// +kubebuilder:validation:XValidation:rule="!has(self.existingClaim) || (!has(self.storageClassName) && !has(self.capacity))",message="existingClaim uses a claim that already exists: remove storageClassName and capacity, which only apply to a claim pqcache creates"
// +kubebuilder:validation:XValidation:rule="!has(self.existingClaim) || !has(self.reclaim)",message="reclaim applies only to a claim pqcache creates: an existingClaim is never deleted by pqcache"
// +kubebuilder:validation:XValidation:rule="!has(self.existingClaim) || !has(self.allowExpansion) || !self.allowExpansion",message="allowExpansion applies only to a claim pqcache creates"
type DatasetVolume struct {
	// existingClaim names a PersistentVolumeClaim in the Dataset's namespace to use instead of
	// creating one. pqcache never deletes it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="existingClaim must be a valid Kubernetes object name (lowercase letters, digits, '-' and '.')"
	ExistingClaim string `json:"existingClaim,omitempty"`

	// storageClassName is the StorageClass of the claim pqcache creates. Empty uses the cluster's
	// default class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// capacity is the size of the claim pqcache creates (e.g. "100Gi"). Omitted, pqcache sizes it
	// from the first listing plus headroom and reports the size it chose in status.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",message="capacity must be a Kubernetes quantity, a size such as 100Gi or 500G"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",message="capacity must be greater than zero"
	Capacity *resource.Quantity `json:"capacity,omitempty"`

	// accessModes of the claim pqcache creates. ReadWriteOnce is enough for one node; benchmarks
	// spread over nodes need ReadOnlyMany or ReadWriteMany.
	// +optional
	// +listType=set
	// +kubebuilder:default={ReadWriteOnce}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadOnlyMany;ReadWriteMany;ReadWriteOncePod
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`

	// reclaim is Delete (default: the claim goes with the Dataset) or Retain (the claim and its data
	// stay after the Dataset is deleted). Only for a claim pqcache creates.
	// +optional
	Reclaim ReclaimPolicy `json:"reclaim,omitempty"`

	// allowExpansion lets pqcache grow the claim it created when a sync needs more room and the
	// StorageClass allows volume expansion. Without it, such a sync is refused with reason
	// InsufficientCapacity.
	// +optional
	AllowExpansion *bool `json:"allowExpansion,omitempty"`
}

// RefreshPolicy says when a Dataset is synced. Triggers combine: a schedule, a manual token and the
// first sync on creation each start a sync; suspend holds them all.
type RefreshPolicy struct {
	// schedule is a cron expression in UTC ("0 * * * *", five fields) or a macro ("@hourly",
	// "@every 30m"). Schedules missed while the operator was down run once, not once per miss.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every +([0-9]+(ms|s|m|h))+|([0-9A-Za-z*/,?-]+ +){4}[0-9A-Za-z*/,?-]+)$')",message="schedule must be a five-field cron expression such as \"0 * * * *\", or a macro such as @hourly, @daily or @every 30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^@every +([0-9]+(ms|s|m|h))+$') || duration(self.substring(6).trim()) >= duration('1m')",message="@every must be at least 1m: each refresh is a pod and a listing of the whole prefix"
	Schedule string `json:"schedule,omitempty"`

	// manual is a token: setting it to a value it has not had runs one sync, after which
	// status.lastManualSync holds the same value. Any string works; a timestamp reads well in git.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Manual string `json:"manual,omitempty"`

	// onCreate runs a first sync as soon as the Dataset exists. Default true.
	// +optional
	// +kubebuilder:default=true
	OnCreate *bool `json:"onCreate,omitempty"`

	// suspend holds every trigger. A sync already running finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// events is a source of the bucket's S3 event notifications: each batch of changed keys is synced
	// within seconds by a targeted sync that lists nothing (a new partition under spec.fresh first).
	// The schedule keeps running as the safety net, since notifications can be lost.
	// +optional
	Events *EventSource `json:"events,omitempty"`
}

// EventSource is where a Dataset's S3 event notifications come from: exactly one of an SQS queue the
// operator polls, or pqcache's own webhook endpoint that the store posts to.
// +kubebuilder:validation:XValidation:rule="has(self.sqs) != has(self.webhook)",message="events must set exactly one of sqs or webhook"
type EventSource struct {
	// sqs is an SQS queue the bucket sends its notifications to (directly, or through SNS or
	// EventBridge). The operator long-polls it and deletes a message once the change it carries is
	// published or found stale. One queue serves one Dataset.
	// +optional
	SQS *SQSEventSource `json:"sqs,omitempty"`

	// webhook makes the operator accept notifications posted to its endpoint,
	// POST /events/NAMESPACE/NAME, with the Dataset's token (status.events.webhookPath says where;
	// the token is in the Secret named by tokenSecretRef, created by the operator when omitted).
	// +optional
	Webhook *WebhookEventSource `json:"webhook,omitempty"`

	// window is how long the operator waits for more notifications after one arrives before it syncs
	// them together: a burst becomes one sync. Default 2s for a Dataset on a claim (each sync is a Job),
	// 200ms for one with spec.replicas (the seed's agent syncs in its own process).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10ms') && duration(self) <= duration('5m')",message="window must be a duration between 10ms and 5m, e.g. 500ms"
	Window *metav1.Duration `json:"window,omitempty"`

	// maxDelay bounds how long a notification waits while more keep coming. Default 10s on a claim,
	// 1s with spec.replicas.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10ms') && duration(self) <= duration('30m')",message="maxDelay must be a duration between 10ms and 30m, e.g. 2s"
	MaxDelay *metav1.Duration `json:"maxDelay,omitempty"`
}

// SQSEventSource is an SQS (or SQS-compatible) queue.
type SQSEventSource struct {
	// queueURL is the queue's URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/lake-events.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="queueURL must be an http:// or https:// URL, as SQS's GetQueueUrl returns it"
	QueueURL string `json:"queueURL"`

	// region of the queue; empty takes it from an AWS queue URL.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// endpoint of an SQS-compatible server; empty means AWS, or the queue URL's host when it is not AWS's.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint,omitempty"`

	// credentialsSecretRef names a Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the
	// queue. Omitted, the source's credentials Secret is used, or else the operator's own identity
	// (its ServiceAccount's role): the operator, not a worker pod, polls the queue.
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`
}

// WebhookEventSource is pqcache's own notification endpoint.
type WebhookEventSource struct {
	// tokenSecretRef names a Secret whose key "token" holds the token a store must present (as
	// "Authorization: Bearer TOKEN"; "?token=TOKEN", for stores that cannot send headers, only where the
	// installation turns it on, since access logs keep URLs: chart value events.queryToken). Omitted,
	// the operator creates the Secret NAME-events-token with a random token.
	// +optional
	TokenSecretRef *SecretReference `json:"tokenSecretRef,omitempty"`
}

// VerifyMode says how much a worker checks a downloaded file before publishing it.
// +kubebuilder:validation:Enum=Checksum;SHA256;Size
type VerifyMode string

const (
	// VerifyChecksum checks the size, the store's checksum (or a single-part ETag's MD5) when it
	// offers one, and a Parquet file's magic bytes and footer. The manifest keeps the store's
	// full-object checksum as each file's hash when there is one, SHA-256 otherwise.
	VerifyChecksum VerifyMode = "Checksum"
	// VerifySHA256 checks what Checksum does and also keeps SHA-256 of every file in the manifest: a
	// second hash of every byte the store vouches for with a checksum.
	VerifySHA256 VerifyMode = "SHA256"
	// VerifySize checks the size and a Parquet file's magic bytes and footer, skipping the hash.
	VerifySize VerifyMode = "Size"
)

// SyncOptions tunes the worker that copies a Dataset.
type SyncOptions struct {
	// parallelism is the number of concurrent ranged GETs, across and within files.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Parallelism int32 `json:"parallelism,omitempty"`

	// partSize is the size of one ranged GET. The worker's buffer memory is about
	// partSize × parallelism, whatever the file sizes.
	// +optional
	// +kubebuilder:default="16Mi"
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",message="partSize must be a Kubernetes quantity, a size such as 16Mi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('5Gi')) <= 0",message="partSize must be between 1Mi and 5Gi"
	PartSize *resource.Quantity `json:"partSize,omitempty"`

	// verify is Checksum (default), SHA256 or Size; see VerifyMode.
	// +optional
	// +kubebuilder:default=Checksum
	Verify VerifyMode `json:"verify,omitempty"`

	// prune deletes cached files whose objects are gone from the bucket. Default true.
	// +optional
	// +kubebuilder:default=true
	Prune *bool `json:"prune,omitempty"`

	// keepGenerations is how many whole generations of the data the volume keeps for readers that
	// want one consistent snapshot while refreshes run (see "Reading a Dataset" in docs/datasets.md).
	// Each sync that changes something publishes its generation as a tree of hard links under
	// .pqcache/generations/ (current names the newest); older ones go once they are beyond this
	// number, have not been current for 5 minutes, and no reader holds them or BenchRun reads them.
	// A generation costs a directory entry per file and the space of the files it alone still holds.
	// 0 publishes the stable paths only.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	KeepGenerations *int32 `json:"keepGenerations,omitempty"`

	// timeout bounds one sync Job (its activeDeadlineSeconds), e.g. "6h".
	// +optional
	// +kubebuilder:default="6h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="timeout must be a duration of at least 1m, e.g. 30m or 6h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// resources of the worker container. Defaults come from the operator's configuration.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// DatasetStatus is what the controller observed and did. Measurements are integers (bytes,
// milliseconds); per-file detail lives in the manifest on the volume, not here.
type DatasetStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Syncing, Degraded, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// claimName is the PersistentVolumeClaim that holds the cache.
	// +optional
	ClaimName string `json:"claimName,omitempty"`

	// manifest summarises what is published on the volume.
	// +optional
	Manifest *ManifestSummary `json:"manifest,omitempty"`

	// lastSync is the outcome of the last sync that finished, successful or not.
	// +optional
	LastSync *SyncResult `json:"lastSync,omitempty"`

	// lastSuccessfulSyncTime is when the last successful sync finished.
	// +optional
	LastSuccessfulSyncTime *metav1.Time `json:"lastSuccessfulSyncTime,omitempty"`

	// progress of the sync running now; absent when none runs.
	// +optional
	Progress *SyncProgress `json:"progress,omitempty"`

	// nextSyncTime is when spec.refresh.schedule next starts a listing sync. It counts from
	// lastListingSyncTime: targeted syncs do not move it.
	// +optional
	NextSyncTime *metav1.Time `json:"nextSyncTime,omitempty"`

	// lastListingSyncTime is when the last successful listing sync started: a sync that lists the
	// whole prefix, so it also repairs changes whose event notifications were lost. The schedule
	// counts from it.
	// +optional
	LastListingSyncTime *metav1.Time `json:"lastListingSyncTime,omitempty"`

	// lastTargetedSyncTime is when the last successful targeted sync started: one that applied the
	// keys event notifications named and listed nothing.
	// +optional
	LastTargetedSyncTime *metav1.Time `json:"lastTargetedSyncTime,omitempty"`

	// lastManualSync is the spec.refresh.manual token of the last manual sync that ran.
	// +optional
	LastManualSync string `json:"lastManualSync,omitempty"`

	// layout summarises the Parquet files' row groups, with advice where the layout will scan slowly.
	// +optional
	Layout *LayoutSummary `json:"layout,omitempty"`

	// failedAttempts counts consecutive failed syncs; it drives the retry backoff and resets on success.
	// +optional
	FailedAttempts int32 `json:"failedAttempts,omitempty"`

	// lastFailureTime is when the last failed sync finished.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`

	// capacityBytes is the size of the claim, as requested.
	// +optional
	CapacityBytes int64 `json:"capacityBytes,omitempty"`

	// generations lists the complete generations of the data the volume keeps for readers that want
	// one consistent snapshot while refreshes run, and the space they take.
	// +optional
	Generations *GenerationsStatus `json:"generations,omitempty"`

	// events counts the S3 event notifications received and applied, and the freshness they gave.
	// +optional
	Events *EventStatus `json:"events,omitempty"`

	// capacityNote says how pqcache chose the claim's size when volume.capacity is omitted.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CapacityNote string `json:"capacityNote,omitempty"`

	// replicas sums up the per-node copies of a Dataset with spec.replicas.
	// +optional
	Replicas *ReplicasStatus `json:"replicas,omitempty"`
}

// GenerationsStatus describes the generations kept on a Dataset's volume.
type GenerationsStatus struct {
	// current is the generation readers of the current data see.
	// +required
	Current int64 `json:"current"`
	// kept lists the generations on the volume, newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Kept []KeptGeneration `json:"kept,omitempty"`
	// extraBytes is the space the older generations take beyond the current one.
	// +optional
	ExtraBytes int64 `json:"extraBytes,omitempty"`
}

// KeptGeneration is one generation on the volume.
type KeptGeneration struct {
	// generation is the generation's number.
	// +required
	Generation int64 `json:"generation"`
	// files is how many files the generation holds.
	// +optional
	Files int64 `json:"files,omitempty"`
	// bytes is the size of the generation's files.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// published is when the generation became current.
	// +optional
	Published *metav1.Time `json:"published,omitempty"`
	// pinned is true while a BenchRun reads it.
	// +optional
	Pinned bool `json:"pinned,omitempty"`
}

// EventStatus is what a Dataset's event source delivered.
type EventStatus struct {
	// source is sqs or webhook.
	// +required
	Source string `json:"source"`
	// webhookPath is where a store posts notifications for this Dataset, on the operator's event
	// endpoint (the token is in tokenSecret).
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`
	// tokenSecret names the Secret that holds the webhook's token.
	// +optional
	TokenSecret string `json:"tokenSecret,omitempty"`
	// lastEventTime is the newest event time received.
	// +optional
	LastEventTime *metav1.Time `json:"lastEventTime,omitempty"`
	// received counts the changes the notifications carried for this Dataset.
	// +optional
	Received int64 `json:"received,omitempty"`
	// applied counts changes published by targeted syncs (or by a listing sync after an overflow).
	// +optional
	Applied int64 `json:"applied,omitempty"`
	// ignored counts records outside the Dataset's prefix or include/exclude globs.
	// +optional
	Ignored int64 `json:"ignored,omitempty"`
	// stale counts changes that no longer described the bucket when they were synced.
	// +optional
	Stale int64 `json:"stale,omitempty"`
	// pending counts changes received and not yet applied: waiting for their batch, or being synced.
	// +optional
	Pending int64 `json:"pending,omitempty"`
	// foundByListing counts changes (files copied or deleted) that listing syncs found and no
	// notification had announced: a store that loses notifications. The schedule's listing repaired
	// them; a count that keeps growing means the events alone would leave the data stale.
	// +optional
	FoundByListing int64 `json:"foundByListing,omitempty"`
	// lastFoundByListingTime is when the last listing sync that found unannounced changes started.
	// +optional
	LastFoundByListingTime *metav1.Time `json:"lastFoundByListingTime,omitempty"`
	// lagMillis is, for the last applied batch, the time from its newest event to its publication.
	// +optional
	LagMillis int64 `json:"lagMillis,omitempty"`
	// lastPublishTime is when the last applied batch was published.
	// +optional
	LastPublishTime *metav1.Time `json:"lastPublishTime,omitempty"`
}

// ManifestSummary describes the manifest committed on the volume.
type ManifestSummary struct {
	// files is the number of published files.
	// +required
	Files int64 `json:"files"`
	// bytes is their total size.
	// +required
	Bytes int64 `json:"bytes"`
	// size is bytes for people, as `kubectl get pvc` shows capacities ("22Mi", "1.4Gi").
	// +optional
	Size string `json:"size,omitempty"`
	// generation increases by one with every committed manifest.
	// +required
	Generation int64 `json:"generation"`
	// digest identifies the manifest's content (keys, sizes, checksums); equal digests mean equal data.
	// +optional
	Digest string `json:"digest,omitempty"`
	// sourceHash identifies the source, include/exclude globs and prune setting the published data was
	// synced with. When the spec's differ, the data no longer matches the spec and a sync is due.
	// +optional
	SourceHash string `json:"sourceHash,omitempty"`
}

// SyncOutcome is how a sync ended.
// +kubebuilder:validation:Enum=Succeeded;Failed
type SyncOutcome string

const (
	// SyncSucceeded means every planned copy and delete was done and the manifest committed.
	SyncSucceeded SyncOutcome = "Succeeded"
	// SyncFailed means the sync stopped or some files failed; the previous data is still published.
	SyncFailed SyncOutcome = "Failed"
)

// SyncResult is the summary of one finished sync.
type SyncResult struct {
	// result is Succeeded or Failed.
	// +required
	Result SyncOutcome `json:"result"`
	// reason is a condition reason for a failed sync (AccessDenied, JobFailed, ...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains a failure in a sentence.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// jobName is the worker Job that ran the sync.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// specGeneration is the Dataset metadata.generation the sync ran for.
	// +optional
	SpecGeneration int64 `json:"specGeneration,omitempty"`
	// sourceHash identifies the source settings the sync ran with (see manifest.sourceHash).
	// +optional
	SourceHash string `json:"sourceHash,omitempty"`
	// trigger says what started the sync: Initial, Manual, Scheduled, SourceChanged or Retry.
	// +optional
	Trigger string `json:"trigger,omitempty"`
	// startTime is when the sync started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the sync finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// durationMillis is the sync's wall time.
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`
	// filesCopied is the number of new or changed files downloaded and published.
	// +optional
	FilesCopied int64 `json:"filesCopied,omitempty"`
	// filesDeleted is the number of cached files removed because their objects are gone.
	// +optional
	FilesDeleted int64 `json:"filesDeleted,omitempty"`
	// filesUnchanged is the number of files left as they were.
	// +optional
	FilesUnchanged int64 `json:"filesUnchanged,omitempty"`
	// filesFailed is the number of files that could not be copied.
	// +optional
	FilesFailed int64 `json:"filesFailed,omitempty"`
	// bytesCopied is the number of bytes downloaded.
	// +optional
	BytesCopied int64 `json:"bytesCopied,omitempty"`
	// bytesPerSecond is bytesCopied over the copy phase's wall time.
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// listRequests is the number of ListObjectsV2 requests made.
	// +optional
	ListRequests int64 `json:"listRequests,omitempty"`
	// getRequests is the number of GetObject requests made (zero for an unchanged prefix).
	// +optional
	GetRequests int64 `json:"getRequests,omitempty"`
	// filesFromFallback are, on a node's copy filled from a peer, files the peer could not serve (or
	// served wrong) that were copied from the bucket instead.
	// +optional
	FilesFromFallback int64 `json:"filesFromFallback,omitempty"`
	// filesUnverified are files copied with a weaker check than the store vouches for: multipart
	// objects of a store that ignores part reads, checked by size only (warning says why).
	// +optional
	FilesUnverified int64 `json:"filesUnverified,omitempty"`
	// warning says what the sync did that the user should know and may act on.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Warning string `json:"warning,omitempty"`
	// neededBytes is, for a sync refused with InsufficientCapacity, how many more bytes the volume
	// needed.
	// +optional
	NeededBytes int64 `json:"neededBytes,omitempty"`
	// tableVersion is, for a table Dataset, the committed version of the table the sync read (Delta:
	// its log's version); the generation it published, if it succeeded, is that version.
	// +optional
	TableVersion *int64 `json:"tableVersion,omitempty"`
}

// SyncProgress is the live progress of a running sync, reported by its worker.
type SyncProgress struct {
	// listing is true while the sync still lists and plans the prefix: filesTotal and bytesTotal grow
	// until then, and remainingMillis is unknown.
	// +optional
	Listing bool `json:"listing,omitempty"`
	// filesDone of filesTotal planned copies are published.
	// +required
	FilesDone int64 `json:"filesDone"`
	// filesTotal is the number of planned copies.
	// +required
	FilesTotal int64 `json:"filesTotal"`
	// bytesDone of bytesTotal are downloaded.
	// +required
	BytesDone int64 `json:"bytesDone"`
	// bytesTotal is the size of the planned copies.
	// +required
	BytesTotal int64 `json:"bytesTotal"`
	// bytesPerSecond is the recent download rate.
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// remainingMillis estimates the time left at the recent rate.
	// +optional
	RemainingMillis int64 `json:"remainingMillis,omitempty"`
	// updateTime is when the worker reported these figures.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// LayoutSummary describes the row groups of the cached Parquet files, read from their footers.
type LayoutSummary struct {
	// parquetFiles is the number of Parquet files inspected.
	// +optional
	ParquetFiles int64 `json:"parquetFiles,omitempty"`
	// rowGroups is the total number of row groups.
	// +optional
	RowGroups int64 `json:"rowGroups,omitempty"`
	// minRowsPerGroup is the smallest row group's row count.
	// +optional
	MinRowsPerGroup int64 `json:"minRowsPerGroup,omitempty"`
	// maxRowsPerGroup is the largest row group's row count.
	// +optional
	MaxRowsPerGroup int64 `json:"maxRowsPerGroup,omitempty"`
	// advice lists layout problems that slow scans (tiny row groups, single-group files, tiny or
	// huge files), one sentence each.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Advice []string `json:"advice,omitempty"`
}

// Dataset mirrors an S3 prefix onto a PersistentVolumeClaim and keeps it fresh: new or changed
// objects are copied, vanished ones deleted, unchanged ones cost nothing.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pqds,categories=pqcache
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Files",type=integer,JSONPath=`.status.manifest.files`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.manifest.size`,description="Bytes published on the volume"
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.status.manifest.generation`,description="The published generation of the data"
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSync.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claimName`,priority=1
// +kubebuilder:printcolumn:name="Copies",type=string,JSONPath=`.status.replicas.readyOfDesired`,description="Per-node copies ready of desired (spec.replicas)",priority=1
type Dataset struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is what to mirror and when.
	// +required
	Spec DatasetSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	Status DatasetStatus `json:"status,omitzero"`
}

// DatasetList is a list of Datasets.
// +kubebuilder:object:root=true
type DatasetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Dataset `json:"items"`
}

func init() {
	SchemeBuilder.Register(register(&Dataset{}, &DatasetList{}))
}
