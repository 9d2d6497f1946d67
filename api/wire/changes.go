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

import "time"

// ChangeSet is what the operator hands a targeted sync (`pqcache sync --changes FILE`): the keys S3
// event notifications said changed, so that the worker checks just those against the bucket instead
// of listing the prefix. The operator writes it as JSON into a ConfigMap the Job mounts.
type ChangeSet struct {
	// Changes are the changed keys, full S3 keys (with the Dataset's prefix), at most one per key.
	Changes []Change `json:"changes"`
}

// Change is one key an event named. The worker trusts none of it: it asks the bucket for the key's
// current state, so that a stale, duplicated or reordered event never wins over the object.
type Change struct {
	Key string `json:"key"`
	// Removed is true for an ObjectRemoved event.
	Removed bool `json:"removed,omitempty"`
	// Size, ETag and Sequencer are what the event said, for the report and for telling stale events.
	Size      int64  `json:"size,omitempty"`
	ETag      string `json:"etag,omitempty"`
	Sequencer string `json:"sequencer,omitempty"`
	// EventTime is when the store says the change happened (the start of the freshness lag).
	EventTime time.Time `json:"eventTime,omitzero"`
}

// ChangeOutcome is what a targeted sync did with its ChangeSet (in the SyncReport).
type ChangeOutcome struct {
	// Applied keys were copied or deleted and are published (or were already as the bucket has them).
	Applied int64 `json:"applied"`
	// Stale keys' events no longer described the bucket (the object changed again, or came back):
	// the worker published what the bucket holds now, or nothing.
	Stale int64 `json:"stale"`
	// Ignored keys are outside the Dataset's prefix or include/exclude globs.
	Ignored int64 `json:"ignored"`
	// PublishedAt is when the last change was published on the volume (the end of the lag).
	PublishedAt time.Time `json:"publishedAt,omitzero"`
	// OldestEventTime is the earliest event time of an applied change: PublishedAt minus it is the
	// batch's worst freshness lag.
	OldestEventTime time.Time `json:"oldestEventTime,omitzero"`
}

// GenerationSummary says which complete generations of the data a sync left on the volume, for
// readers that want one consistent snapshot (in the SyncReport).
type GenerationSummary struct {
	// Current is the generation the stable path shows now (the manifest generation).
	Current int64 `json:"current"`
	// Kept lists the generations on the volume, newest first.
	Kept []GenerationInfo `json:"kept,omitempty"`
	// ExtraBytes is the space the kept older generations take beyond the current one (files no newer
	// generation shares).
	ExtraBytes int64 `json:"extraBytes,omitempty"`
}

// GenerationInfo is one kept generation.
type GenerationInfo struct {
	Generation int64     `json:"generation"`
	Files      int64     `json:"files"`
	Bytes      int64     `json:"bytes"`
	Published  time.Time `json:"published,omitzero"`
	// Pinned is true when a reader asked to keep it (--keep-generation).
	Pinned bool `json:"pinned,omitempty"`
}
