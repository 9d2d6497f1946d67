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
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// expectedFile is testdata/<name>/expected.json, written by hack/delta-testdata.py from what
// deltalake (delta-rs) itself reports for every version of the table.
type expectedFile struct {
	Latest   int64             `json:"latest"`
	Versions map[string][]File `json:"versions"`
}

func loadFixture(t *testing.T, name string) (dirTable, expectedFile) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp expectedFile
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Versions) == 0 {
		t.Fatalf("%s: expected.json lists no versions", name)
	}
	return dirTable(filepath.Join("testdata", name, "table")), exp
}

// TestFixturesMatchDeltalake replays every version of every fixture and compares the file set
// with deltalake's own answer, so our replay agrees with a real Delta reader.
func TestFixturesMatchDeltalake(t *testing.T) {
	for _, name := range []string{"appends", "history", "special"} {
		t.Run(name, func(t *testing.T) {
			table, exp := loadFixture(t, name)
			log := table.log(t)
			for vs, want := range exp.Versions {
				v, _ := strconv.ParseInt(vs, 10, 64)
				snap, err := At(context.Background(), log, v, table.fetch, Limits{})
				if err != nil {
					t.Fatalf("At(%d): %v", v, err)
				}
				if diff := cmp.Diff(want, snap.Files, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("At(%d) files (-deltalake +ours):\n%s", v, diff)
				}
				checkOnDisk(t, table, snap)
			}
			snap, err := Latest(context.Background(), log, table.fetch, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version != exp.Latest {
				t.Errorf("Latest version = %d, want %d", snap.Version, exp.Latest)
			}
			if diff := cmp.Diff(exp.Versions[strconv.FormatInt(exp.Latest, 10)], snap.Files); diff != "" {
				t.Errorf("Latest files (-deltalake +ours):\n%s", diff)
			}
		})
	}
}

// checkOnDisk asserts that every key the snapshot names exists in the fixture with its size.
func checkOnDisk(t *testing.T, table dirTable, snap Snapshot) {
	t.Helper()
	for _, f := range snap.Files {
		info, err := os.Stat(filepath.Join(string(table), filepath.FromSlash(f.Key)))
		if err != nil {
			t.Errorf("version %d: %v", snap.Version, err)
		} else if info.Size() != f.Size {
			t.Errorf("version %d: %s is %d bytes, the log says %d", snap.Version, f.Key, info.Size(), f.Size)
		}
	}
	for _, k := range snap.LogKeys {
		if _, err := os.Stat(filepath.Join(string(table), filepath.FromSlash(k))); err != nil {
			t.Errorf("version %d: log key: %v", snap.Version, err)
		}
	}
}

// TestHistoryLogKeys: a version after the checkpoint needs the checkpoint and the commits after
// it, never older commits or _last_checkpoint; a version before it needs commits from 0.
func TestHistoryLogKeys(t *testing.T) {
	table, exp := loadFixture(t, "history")
	log := table.log(t)
	var cp int64 = -1
	for _, o := range log {
		if n, ok, _ := parseLogKey(o.Key); ok && n.Kind == kindCheckpoint {
			cp = n.Version
		}
	}
	if cp <= 0 || cp >= exp.Latest {
		t.Fatalf("fixture must have a checkpoint strictly inside its history, got %d of %d", cp, exp.Latest)
	}
	for v := int64(0); v <= exp.Latest; v++ {
		snap, err := At(context.Background(), log, v, table.fetch, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		switch {
		case v < cp:
			for u := int64(0); u <= v; u++ {
				want = append(want, commitKey(u))
			}
		case v == cp:
			want = []string{LogDir + "00000000000000000004.checkpoint.parquet", commitKey(cp)}
		default:
			want = []string{LogDir + "00000000000000000004.checkpoint.parquet"}
			for u := cp + 1; u <= v; u++ {
				want = append(want, commitKey(u))
			}
		}
		if diff := cmp.Diff(want, snap.LogKeys); diff != "" {
			t.Errorf("At(%d) LogKeys (-want +got):\n%s", v, diff)
		}
		for _, k := range snap.LogKeys {
			if strings.HasSuffix(k, "_last_checkpoint") {
				t.Errorf("At(%d) includes %s", v, k)
			}
		}
	}
}

// TestHistoryDoesNotReadOlderCommits: after a checkpoint, the commits before it are not fetched.
func TestHistoryDoesNotReadOlderCommits(t *testing.T) {
	table, exp := loadFixture(t, "history")
	var fetched []string
	snap, err := Latest(context.Background(), table.log(t), func(ctx context.Context, key string) (io.ReadCloser, error) {
		fetched = append(fetched, key)
		return table.fetch(ctx, key)
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != exp.Latest {
		t.Fatalf("Latest = %d, want %d", snap.Version, exp.Latest)
	}
	if diff := cmp.Diff(snap.LogKeys, fetched); diff != "" {
		t.Errorf("fetched other keys than LogKeys (-LogKeys +fetched):\n%s", diff)
	}
}

// TestSpecialPartitionValuesDecoded: the log's doubly escaped paths become the objects' names.
func TestSpecialPartitionValuesDecoded(t *testing.T) {
	table, _ := loadFixture(t, "special")
	snap, err := Latest(context.Background(), table.log(t), table.fetch, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var sawEscaped bool
	for _, k := range keysOf(snap.Files) {
		if strings.Contains(k, "%25") || strings.Contains(k, "%C3%BC") {
			sawEscaped = true
		}
		if strings.Contains(k, "%2525") {
			t.Errorf("%s is still URI-encoded", k)
		}
	}
	if !sawEscaped {
		t.Errorf("no key keeps its Hive escapes: %v", keysOf(snap.Files))
	}
}

// TestHistoryAfterCleanup lists the history table as metadata cleanup would leave it (commits
// before the checkpoint gone), so the state must come from delta-rs's checkpoint alone.
func TestHistoryAfterCleanup(t *testing.T) {
	table, exp := loadFixture(t, "history")
	var log []LogObject
	for _, o := range table.log(t) {
		if n, ok, _ := parseLogKey(o.Key); ok && n.Kind == kindCommit && n.Version < 4 {
			continue
		}
		log = append(log, o)
	}
	for v := int64(4); v <= exp.Latest; v++ {
		snap, err := At(context.Background(), log, v, table.fetch, Limits{})
		if err != nil {
			t.Fatalf("At(%d): %v", v, err)
		}
		if diff := cmp.Diff(exp.Versions[strconv.FormatInt(v, 10)], snap.Files); diff != "" {
			t.Errorf("At(%d) (-deltalake +ours):\n%s", v, diff)
		}
	}
	if _, err := At(context.Background(), log, 2, table.fetch, Limits{}); !errors.Is(err, ErrNoSuchVersion) {
		t.Errorf("At(2) after cleanup: %v, want ErrNoSuchVersion", err)
	}
}
