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

package delta

import "fmt"

// Limits bound what a hostile or runaway log can cost: memory (line, live files), disk (the
// checkpoint's temporary file) and time (commits, actions). A zero field takes its default.
type Limits struct {
	// MaxCommitBytes caps one JSON commit file (default 256 MiB).
	MaxCommitBytes int64
	// MaxLineBytes caps one line of a JSON commit, the unit held in memory (default 64 MiB).
	MaxLineBytes int
	// MaxCheckpointBytes caps one checkpoint part, written to a temporary file (default 4 GiB).
	MaxCheckpointBytes int64
	// MaxActions caps the file actions replayed and the live files held (default 50 million).
	MaxActions int64
	// MaxCommits caps the JSON commits replayed for one snapshot (default 100,000).
	MaxCommits int64
	// TempDir is where checkpoint parts are written; empty means os.TempDir().
	TempDir string
}

// Defaults for Limits' zero fields.
const (
	DefaultMaxCommitBytes     = 256 << 20
	DefaultMaxLineBytes       = 64 << 20
	DefaultMaxCheckpointBytes = 4 << 30
	DefaultMaxActions         = 50_000_000
	DefaultMaxCommits         = 100_000
)

// withDefaults returns l with every zero (or negative) field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxCommitBytes <= 0 {
		l.MaxCommitBytes = DefaultMaxCommitBytes
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = DefaultMaxLineBytes
	}
	if l.MaxCheckpointBytes <= 0 {
		l.MaxCheckpointBytes = DefaultMaxCheckpointBytes
	}
	if l.MaxActions <= 0 {
		l.MaxActions = DefaultMaxActions
	}
	if l.MaxCommits <= 0 {
		l.MaxCommits = DefaultMaxCommits
	}
	return l
}

// tooLarge reports that what (a key or a count) went over the limit named name.
func tooLarge(what, name string, limit int64) error {
	return fmt.Errorf("%w: %s is over Limits.%s (%d)", ErrTooLarge, what, name, limit)
}
