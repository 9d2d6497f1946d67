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

import (
	"fmt"
	"strconv"
	"strings"
)

// LogDir is the log's folder under the table root: a sync lists it to find the newest version. Keys
// in this package are relative to the root.
const LogDir = "_delta_log/"

// keyKind says what a _delta_log key is. Only these kinds take part in a snapshot; everything else
// in the folder (_last_checkpoint, .crc, compacted logs, temp files, _staged_commits/) is ignored.
type keyKind int

const (
	kindCommit         keyKind = iota + 1 // <v>.json
	kindCheckpoint                        // <v>.checkpoint.parquet (classic)
	kindCheckpointPart                    // <v>.checkpoint.<part>.<parts>.parquet (multi-part)
	kindCheckpointV2                      // <v>.checkpoint.<uuid>.json|parquet (UUID-named, v2 spec)
)

// logName is a parsed _delta_log key.
type logName struct {
	Kind    keyKind
	Version int64
	Part    int // 1-based, kindCheckpointPart only
	Parts   int // kindCheckpointPart only
}

// parseLogKey parses key (relative to the table root). ok is false for keys that are not commits or
// checkpoints; err is set for a key shaped like one whose numbers are out of range, since silently
// ignoring it could hide a commit.
func parseLogKey(key string) (n logName, ok bool, err error) {
	rest, found := strings.CutPrefix(key, LogDir)
	if !found || len(rest) < 21 || !allDigits(rest[:20]) || rest[20] != '.' {
		return logName{}, false, nil
	}
	digits, suffix := rest[:20], rest[21:]
	switch {
	case suffix == "json":
		n.Kind = kindCommit
	case suffix == "checkpoint.parquet":
		n.Kind = kindCheckpoint
	case strings.HasPrefix(suffix, "checkpoint."):
		if !parseCheckpointSuffix(strings.TrimPrefix(suffix, "checkpoint."), &n) {
			return logName{}, false, nil
		}
	default:
		return logName{}, false, nil
	}
	v, perr := strconv.ParseInt(digits, 10, 64)
	if perr != nil {
		return logName{}, false, fmt.Errorf("%w: %s: version out of range", ErrCorruptLog, key)
	}
	if n.Kind == kindCheckpointPart && (n.Parts < 1 || n.Part < 1 || n.Part > n.Parts) {
		return logName{}, false, fmt.Errorf("%w: %s: part %d of %d", ErrCorruptLog, key, n.Part, n.Parts)
	}
	n.Version = v
	return n, true, nil
}

// parseCheckpointSuffix parses what follows "<v>.checkpoint." in a multi-part or UUID-named name.
func parseCheckpointSuffix(s string, n *logName) bool {
	if len(s) == 10+1+10+len(".parquet") && s[10] == '.' && strings.HasSuffix(s, ".parquet") &&
		allDigits(s[:10]) && allDigits(s[11:21]) {
		part, err1 := strconv.Atoi(s[:10])
		parts, err2 := strconv.Atoi(s[11:21])
		if err1 != nil || err2 != nil {
			return false
		}
		n.Kind, n.Part, n.Parts = kindCheckpointPart, part, parts
		return true
	}
	id, ok := strings.CutSuffix(s, ".json")
	if !ok {
		id, ok = strings.CutSuffix(s, ".parquet")
	}
	if ok && isUUID(id) {
		n.Kind = kindCheckpointV2
		return true
	}
	return false
}

// commitKey is the key of the JSON commit for version v.
func commitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isUUID reports whether s is a UUID in canonical 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
				return false
			}
		}
	}
	return true
}
