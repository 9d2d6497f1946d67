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

package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// touch creates empty files under dir (resolution looks at names only).
func touch(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveFindsEachKindOfPath(t *testing.T) {
	data := t.TempDir()
	touch(t, data,
		"orders.parquet", "orders/batch=0/part.parquet", // a flat file wins over a folder of the same name
		"events/date=2026-12-01/a.parquet", "events/date=2026-12-02/b.parquet", "events/_SUCCESS",
		"dim/customers.parquet",
		"logs/2026/x.parquet", "logs/2026/y.csv",
		".pqcache/generations/1/orders.parquet", // the cache's own: never a table's
	)
	w := &Workload{Name: "lake", Tables: map[string]Table{
		"orders":    {Path: "orders"},
		"events":    {Path: "events", Hive: true},
		"customers": {Path: "dim/customers.parquet"},
		"logs":      {Path: "logs/**/*.parquet", FileRowNumber: true},
	}, Queries: []Query{{Name: "a", SQL: "x"}}}
	r, err := Resolve(context.Background(), w, w.Queries, Source{Data: Dir(data)})
	if err != nil {
		t.Fatal(err)
	}
	abs := func(rel string) string { return filepath.Join(data, rel) }
	want := map[string]ResolvedTable{
		"orders":    {Files: []string{abs("orders.parquet")}},
		"events":    {Files: []string{abs("events/date=2026-12-01/a.parquet"), abs("events/date=2026-12-02/b.parquet")}, Hive: true},
		"customers": {Files: []string{abs("dim/customers.parquet")}},
		"logs":      {Files: []string{abs("logs/2026/x.parquet")}, FileRowNumber: true},
	}
	if d := cmp.Diff(want, r.Tables); d != "" {
		t.Fatalf("tables (-want +got):\n%s", d)
	}
}

func TestResolveReadsFreshPrefixesFromTheirRoot(t *testing.T) {
	data, fresh := t.TempDir(), t.TempDir()
	touch(t, data, "lineitem/batch=0/part.parquet", "lineitem/batch=7/old.parquet")
	touch(t, fresh, "lineitem/batch=7/new.parquet", "lineitem/batch=0/ignored.parquet")
	w := &Workload{Tables: map[string]Table{"lineitem": {Path: "lineitem"}}, Queries: []Query{{Name: "a", SQL: "x"}}}
	r, err := Resolve(context.Background(), w, w.Queries, Source{Data: Dir(data), Fresh: Dir(fresh), FreshPrefixes: []string{"lineitem/batch=7/"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(data, "lineitem/batch=0/part.parquet"), filepath.Join(fresh, "lineitem/batch=7/new.parquet")}
	if got := r.Tables["lineitem"].Files; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

func TestResolveNamesEveryMissingTable(t *testing.T) {
	data := t.TempDir()
	touch(t, data, "orders.parquet")
	w := &Workload{Tables: map[string]Table{"orders": {Path: "orders"}, "events": {Path: "events"}, "dim": {Path: "dim/*.parquet"}},
		Queries: []Query{{Name: "a", SQL: "x"}}}
	_, err := Resolve(context.Background(), w, w.Queries, Source{Data: Dir(data)})
	var missing *MissingTablesError
	if !errors.As(err, &missing) || !slices.Equal(missing.Tables, []string{"dim", "events"}) {
		t.Fatalf("error %v, want the tables dim and events named", err)
	}
	if got := err.Error(); got != "the data has no Parquet files for tables dim (dim/*.parquet), events (events)" {
		t.Fatalf("message %q", got)
	}
}
