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

// Package notify is S3 event notifications for pqcache: parse, filter, debounce, and the two sources
// that deliver them.
//
// A store announces each write and delete (AWS S3 through SQS, directly or wrapped by SNS or
// EventBridge; S3-compatible stores such as versitygw, MinIO or Ceph RGW through a webhook). Parse
// turns any of those envelopes into Changes. A Debouncer holds one pending batch per Dataset key
// (such as "namespace/name"): it drops changes outside the Dataset's prefix and globs, keeps per
// object only the newest change by sequencer, and hands the consumer a Batch once the stream has
// been quiet for a window, or sooner when a fresh partition arrives. A batch that grew too big, or
// that a source marked as having lost events, is an Overflow batch: the consumer runs a full listing
// sync instead of a targeted one. The two sources are SQSSource, which long-polls a queue and deletes
// a message only after the batch holding it was acknowledged, and Webhook, an http.Handler for
// pqcache's own endpoint.
//
// Delivery is at least once: a change may be seen twice (a redelivered SQS message, a store that
// retries), never silently dropped by this package while its source still holds it. A Change is a
// hint, not a fact: events arrive late, twice and out of order, and some stores report sizes of 0 or
// no ETag, so the consumer checks each key against the bucket before it copies or deletes.
//
// The package imports no Kubernetes code: the operator's manager and a standalone CLI both use it.
// docs/events.md describes the behaviour for users.
package notify
