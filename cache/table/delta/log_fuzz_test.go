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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// seedCommits adds every commit of the fixtures, whole and line by line: real delta-rs output.
func seedCommits(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/table/_delta_log/*.json")
	if len(files) == 0 {
		f.Fatal("no fixture commits to seed from")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(addLine("a%2F..%2F..%2Fx", 1)))
	f.Add([]byte(`{"add":{"path":"b","size":1,"deletionVector":{"storageType":"u","pathOrInlineDv":"` + specDV + `","offset":1}}}`))
	f.Add([]byte(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"]}}`))
}

// checkKey asserts what every key a snapshot returns must be: relative, clean, inside the table,
// outside _delta_log/.
func checkKey(t *testing.T, key string) {
	t.Helper()
	if key == "" || strings.HasPrefix(key, "/") || path.Clean(key) != key || key == ".." ||
		strings.HasPrefix(key, "../") || strings.HasPrefix(key, LogDir) || strings.Contains(key, "://") {
		t.Fatalf("returned key %q is not a clean key inside the table", key)
	}
}

func isClassified(err error) bool {
	for _, s := range []error{ErrCorruptLog, ErrUnsupported, ErrTooLarge, ErrNotATable, ErrNoSuchVersion} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzCommit replays an arbitrary commit after a valid version 0: it must never panic, every
// error must be classifiable, and every key returned must stay inside the table.
func FuzzCommit(f *testing.F) {
	seedCommits(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := base()
		m.objects[commitKey(1)] = data
		snap, err := At(context.Background(), m.log(), 1, m.fetch, Limits{MaxLineBytes: 1 << 16, MaxActions: 1000})
		if err != nil {
			if !isClassified(err) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		for _, f := range snap.Files {
			checkKey(t, f.Key)
			if f.Size < 0 {
				t.Fatalf("negative size for %s", f.Key)
			}
		}
		for _, k := range snap.DeletionVectorFiles {
			checkKey(t, k)
		}
		if want := []string{commitKey(0), commitKey(1)}; fmt.Sprint(snap.LogKeys) != fmt.Sprint(want) {
			t.Fatalf("LogKeys %v, want %v", snap.LogKeys, want)
		}
	})
}

// FuzzCheckpointName parses arbitrary log keys: no panic, and whatever parses prints back to the
// same key, so no two spellings name one version.
func FuzzCheckpointName(f *testing.F) {
	for _, k := range []string{
		"_delta_log/00000000000000000012.json",
		"_delta_log/00000000000000000010.checkpoint.parquet",
		"_delta_log/00000000000000000010.checkpoint.0000000001.0000000003.parquet",
		"_delta_log/00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
		"_delta_log/00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet",
		"_delta_log/_last_checkpoint", "_delta_log/00000000000000000010.crc",
		"_delta_log/00000000000000000004.00000000000000000006.compacted.json",
		"_delta_log/_staged_commits/00000000000000000001.7d17ac10-5cc3-401b-bd1a-9c82dd2ea032.json",
		"_delta_log/99999999999999999999.json", "_delta_log/00000000000000000001.json.tmp",
		"_delta_log/+0000000000000000001.json",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		n, ok, err := parseLogKey(key)
		if err != nil {
			if ok || !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("%q: ok=%v err=%v", key, ok, err)
			}
			return
		}
		if !ok {
			return
		}
		if n.Version < 0 {
			t.Fatalf("%q: version %d", key, n.Version)
		}
		var back string
		switch n.Kind {
		case kindCommit:
			back = commitKey(n.Version)
		case kindCheckpoint:
			back = fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, n.Version)
		case kindCheckpointPart:
			if n.Part < 1 || n.Part > n.Parts {
				t.Fatalf("%q: part %d of %d", key, n.Part, n.Parts)
			}
			back = fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogDir, n.Version, n.Part, n.Parts)
		case kindCheckpointV2:
			back = key[:len(LogDir)+20] // the UUID and extension are checked by isUUID
			if fmt.Sprintf("%s%020d", LogDir, n.Version) != back {
				t.Fatalf("%q: version %d", key, n.Version)
			}
			return
		}
		if back != key {
			t.Fatalf("%q parses as %+v, which prints as %q", key, n, back)
		}
	})
}

// FuzzDataKey decodes arbitrary add paths: whatever is accepted is a clean key inside the table.
func FuzzDataKey(f *testing.F) {
	for _, p := range []string{"a.parquet", "region=west%2520side/part-0.parquet", "%2E%2E/x", "s3://b/k",
		"/abs", "a//b", "a/./b", "%00", "_delta_log/x", "x%2F..%2F..%2Fy", "C:\\x", "a%zz"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := dataKey(raw)
		if err != nil {
			if !isClassified(err) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		checkKey(t, key)
	})
}
