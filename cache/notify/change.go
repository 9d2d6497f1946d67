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

package notify

import (
	"strings"
	"time"
)

// Change is one object written or removed, as an event notification reports it.
type Change struct {
	// Bucket and Key name the object; Key is decoded (real S3 events URL-encode it).
	Bucket string
	Key    string
	// Rel is Key relative to the Dataset's prefix. The Debouncer sets it; Parse leaves it empty.
	Rel string
	// Removed is true for a delete (ObjectRemoved:*, LifecycleExpiration:*); false for a write.
	Removed bool
	// Size and ETag are what the event says about the new object. Some stores send 0 and no ETag
	// (versitygw for copies and multipart uploads), so they are hints for the consumer's own check.
	Size int64
	ETag string
	// Sequencer orders changes to the same key: a hexadecimal string, larger is later (see
	// CompareSequencers). Empty when the source sends none.
	Sequencer string
	// EventTime is when the store says the change happened; the zero time when it says nothing.
	EventTime time.Time
	// Event is the source's event name, for logs ("ObjectCreated:Put", "Object Deleted").
	Event string
}

// CompareSequencers orders two S3 sequencers: -1 if a is earlier than b, 0 if equal, +1 if later.
// Sequencers are hexadecimal strings of varying length; as AWS documents, the shorter one is padded
// with leading zeros before a lexicographic comparison. Case is ignored. Sequencers are comparable
// only between events for the same key.
func CompareSequencers(a, b string) int {
	a, b = strings.ToUpper(a), strings.ToUpper(b)
	if n := len(b) - len(a); n > 0 {
		a = strings.Repeat("0", n) + a
	} else if n < 0 {
		b = strings.Repeat("0", -n) + b
	}
	return strings.Compare(a, b)
}

// supersedes reports whether c, received after old, should replace it as the state of the key: it
// does unless both carry a sequencer and c's is lower. Equal sequencers (a duplicate) and missing
// ones keep the later arrival.
func (c Change) supersedes(old Change) bool {
	if c.Sequencer == "" || old.Sequencer == "" {
		return true
	}
	return CompareSequencers(c.Sequencer, old.Sequencer) >= 0
}
