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
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds Parse and ParseSelection what a user's --workload file, ConfigMap or BenchRun
// spec can hold. Seeds are the built-in workloads written as JSON and as YAML, a ConfigMap, and the
// mistakes TestParseSaysWhatIsWrong covers.
//
// Properties: Parse returns a workload or an error, never both; a workload it accepts passes
// Validate, keeps the limits, has no table path that leaves the data root, and reads back equal
// from its own JSON; a selection it accepts names only queries of the workload.
func FuzzParse(f *testing.F) {
	for _, name := range Builtins {
		w, err := Builtin(name)
		if err != nil {
			f.Fatal(err)
		}
		// Three queries of 120 bytes, not the built-in's 22 in full: the fuzz engine minimizes every
		// input that finds new code, a byte at a time, and a 37 KB seed kept it minimizing, not
		// fuzzing, for a whole short run (19 executions in 10 s).
		w.Queries = w.Queries[:min(3, len(w.Queries))]
		for i := range w.Queries { // the text of a query is opaque here: its first bytes do
			w.Queries[i].SQL = w.Queries[i].SQL[:min(120, len(w.Queries[i].SQL))]
			w.Queries[i].Polars = w.Queries[i].Polars[:min(120, len(w.Queries[i].Polars))]
		}
		b, err := json.Marshal(w)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "1-3,q2")
		f.Add(b, "all")
	}
	f.Add([]byte("name: mine\ntables:\n  events:\n    path: events/**/*.parquet\n    hive: true\nqueries:\n- name: count\n  sql: select count(*) from events\n- name: p\n  polars: |\n    def query(t):\n      return t['events']\n"), "count,p")
	f.Add([]byte("kind: ConfigMap\ndata:\n  workload.yaml: |\n    queries:\n    - name: q\n      sql: select 1\n"), "q")
	f.Add([]byte("tables:\n  bad-name:\n    path: ../../etc\nqueries:\n- name: q\n  sq1: select 1\n"), "")
	f.Add([]byte("tables:\n  t:\n    path: /abs\nqueries:\n- name: a\n  sql: x\n- name: a\n  sql: y\n"), "a,a")
	f.Add([]byte(`{"queries":[{"name":"q","sql":"select 1"}],"tables":{"t":{"path":"a/./../../b"}}}`), "q")
	f.Fuzz(func(t *testing.T, data []byte, selection string) {
		doc := data
		if text, ok, err := configMapWorkload(data); err == nil && ok {
			doc = []byte(text)
		}
		w, err := Parse(doc)
		if (w == nil) == (err == nil) {
			t.Fatalf("workload %v and error %v", w, err)
		}
		if err != nil {
			return
		}
		checkWorkload(t, w)
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil || !reflect.DeepEqual(normalize(again), normalize(w)) {
			t.Fatalf("%s reads back as %+v, %v", b, again, err)
		}
		names, err := w.ParseSelection(selection)
		if err != nil {
			return
		}
		for _, n := range names {
			if !slices.Contains(w.QueryNames(), n) {
				t.Fatalf("selection %q names %q, not a query of %v", selection, n, w.QueryNames())
			}
		}
	})
}

func checkWorkload(t *testing.T, w *Workload) {
	t.Helper()
	if err := w.Validate(); err != nil {
		t.Fatalf("Parse accepted a workload that Validate refuses: %v", err)
	}
	if len(w.Queries) == 0 || len(w.Queries) > MaxQueries || len(w.Tables) > MaxTables {
		t.Fatalf("%d queries, %d tables", len(w.Queries), len(w.Tables))
	}
	for name, tb := range w.Tables {
		clean := path.Clean(tb.Path)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			t.Fatalf("table %s: path %q leaves the data root", name, tb.Path)
		}
	}
}

// normalize makes nil and empty table maps equal: JSON writes a nil map as null.
func normalize(w *Workload) *Workload {
	c := *w
	if len(c.Tables) == 0 {
		c.Tables = nil
	}
	return &c
}
