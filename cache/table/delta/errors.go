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

import "errors"

// Callers classify failures with errors.Is: a table that is not there yet, a log that cannot be
// trusted, and a table this package cannot read call for different actions (wait, alert, upgrade).
var (
	// ErrNotATable means the listing holds no commit or checkpoint under _delta_log/.
	ErrNotATable = errors.New("not a Delta table")
	// ErrCorruptLog means the log breaks the protocol: a line that is not JSON, a missing field, a
	// gap in the commits, a path outside the table, a checkpoint that does not parse.
	ErrCorruptLog = errors.New("corrupt Delta log")
	// ErrUnsupported means the table needs a protocol feature this package does not implement.
	ErrUnsupported = errors.New("unsupported Delta table")
	// ErrTooLarge means the log exceeds one of the Limits; the message names the limit.
	ErrTooLarge = errors.New("over a Delta log limit")
	// ErrNoSuchVersion means the requested version is not in the log: newer than its last commit,
	// or older than the history metadata cleanup kept.
	ErrNoSuchVersion = errors.New("no such Delta table version")
)
