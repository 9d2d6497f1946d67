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

package cache_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/generations"
)

// historyTable is delta-rs's table with appends, a partition overwrite, deletes and a checkpoint at
// version 4 (cache/table/delta/testdata, written by hack/delta-testdata.py), and deltalake's own
// list of the live files at each version.
const historyTable = "table/delta/testdata/history/table"

func expectedDeltaFiles(t *testing.T, version string) []string {
	t.Helper()
	b, err := os.ReadFile("table/delta/testdata/history/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Versions map[string][]struct{ Key string } `json:"versions"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range exp.Versions[version] {
		keys = append(keys, f.Key)
	}
	return keys
}

// putTable uploads the fixture's files that keep says, under the env's prefix.
func (e *env) putTable(keep func(key string) bool) {
	e.t.Helper()
	err := filepath.WalkDir(historyTable, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		key := filepath.ToSlash(strings.TrimPrefix(p, historyTable+"/"))
		if !keep(key) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		e.put(key, b)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// generationFiles lists the files of the volume's current generation.
func (e *env) generationFiles() []string {
	e.t.Helper()
	lease, err := generations.Hold(e.dir, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer lease.Release()
	var keys []string
	err = filepath.WalkDir(lease.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(lease.Dir, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

func logKey(name string) string { return "_delta_log/" + name }

// TestATableSyncCopiesOneCommittedVersion: a sync of a Delta table's root copies exactly the files
// of its newest committed version (deltalake's own list, and the log a reader of it opens), not a
// writer's uncommitted file, older versions' files or _last_checkpoint; the next commit's sync
// publishes the next version whole; an unchanged table costs listings and no GET; a commit naming a
// file the bucket lacks publishes nothing and says why.
func TestATableSyncCopiesOneCommittedVersion(t *testing.T) {
	e := newEnv(t)
	table := func(o *cache.Options) {
		o.Table = wire.TableDelta
		o.Generations = &generations.Policy{Keep: 2}
	}
	commitsUpTo := func(last string) func(string) bool {
		return func(key string) bool {
			name, inLog := strings.CutPrefix(key, "_delta_log/")
			return !inLog || len(name) > 20 && name[:20] <= last && !strings.Contains(name, "checkpoint")
		}
	}
	// Every data file is in the bucket (writers write data before they commit), the log up to version
	// 3, and a file no commit names.
	e.putTable(commitsUpTo("00000000000000000003"))
	e.put("region=east/part-uncommitted.parquet", []byte("a writer's file it never committed"))
	rep := e.mustSync(table)
	if rep.Table == nil || rep.Table.Version != 3 {
		t.Fatalf("table in the report: %+v", rep.Table)
	}
	want := append(expectedDeltaFiles(t, "3"), logKey("00000000000000000000.json"), logKey("00000000000000000001.json"),
		logKey("00000000000000000002.json"), logKey("00000000000000000003.json"))
	slices.Sort(want)
	if got := e.generationFiles(); !slices.Equal(got, want) {
		t.Fatalf("generation of version 3:\n%v\nwant\n%v", got, want)
	}

	e.putTable(func(string) bool { return true }) // versions 4 (with its checkpoint) to 7, _last_checkpoint
	rep = e.mustSync(table)
	if rep.Table == nil || rep.Table.Version != 7 || rep.Generations.Current != 2 {
		t.Fatalf("after the later commits: table %+v, generations %+v", rep.Table, rep.Generations)
	}
	want = append(expectedDeltaFiles(t, "7"), logKey("00000000000000000004.checkpoint.parquet"), logKey("00000000000000000005.json"),
		logKey("00000000000000000006.json"), logKey("00000000000000000007.json"))
	slices.Sort(want)
	got := e.generationFiles()
	if !slices.Equal(got, want) {
		t.Fatalf("generation of version 7: the checkpoint, the commits after it and the live files\n%v\nwant\n%v", got, want)
	}

	rep = e.mustSync(table)
	if rep.Requests.Get != 0 || rep.Requests.List != 2 || rep.FilesCopied != 0 || rep.Table.Version != 7 {
		t.Fatalf("an unchanged table: %d GETs, %d listings, %d copied, version %d; want the log's and the root's listings only",
			rep.Requests.Get, rep.Requests.List, rep.FilesCopied, rep.Table.Version)
	}

	e.put(logKey("00000000000000000008.json"), []byte(`{"commitInfo":{"operation":"WRITE"}}`+"\n"+
		`{"add":{"path":"region=east/part-never-written.parquet","size":799,"partitionValues":{"region":"east"},"modificationTime":1,"dataChange":true}}`+"\n"))
	rep, err := e.sync(table)
	if err == nil || rep.Reason != wire.ReasonTableCorrupt || !strings.Contains(rep.Message, "part-never-written.parquet") {
		t.Fatalf("a commit of a file not written: %v, reason %q, message %q", err, rep.Reason, rep.Message)
	}
	if got := e.generationFiles(); !slices.Equal(got, want) {
		t.Fatalf("after the failed sync, current is not version 7's:\n%v", got)
	}

	e.put(logKey("00000000000000000008.json"), []byte(`{"commitInfo":{"operation":"WRITE"}}`+"\n"+
		`{"add":{"path":"region=east/part-uncommitted.parquet","size":999,"partitionValues":{"region":"east"},"modificationTime":1,"dataChange":true}}`+"\n"))
	rep, err = e.sync(table)
	if err == nil || rep.Reason != wire.ReasonTableCorrupt || !strings.Contains(rep.Message, "holds 34") {
		t.Fatalf("a commit of a file at another size than the bucket's: %v, reason %q, message %q", err, rep.Reason, rep.Message)
	}
	if got := e.generationFiles(); !slices.Equal(got, want) {
		t.Fatalf("after the second failed sync, current is not version 7's:\n%v", got)
	}
}

// TestTableArgumentsAreChecked: a table sync refuses what would copy something other than one whole
// version.
func TestTableArgumentsAreChecked(t *testing.T) {
	for name, c := range map[string]struct {
		args wire.SyncArgs
		want string
	}{
		"unknown format": {wire.SyncArgs{Source: "s3://b/t/", SyncOptions: wire.SyncOptions{Table: "hudi"}}, `--table "hudi"`},
		"not a folder":   {wire.SyncArgs{Source: "s3://b/t", SyncOptions: wire.SyncOptions{Table: "delta"}}, "ends with '/'"},
		"a glob":         {wire.SyncArgs{Source: "s3://b/t/", SyncOptions: wire.SyncOptions{Table: "delta", Include: []string{"*.json"}}}, "--include and --exclude"},
	} {
		_, _, err := cache.OptionsFromArgs(c.args.WithDefaults())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}
