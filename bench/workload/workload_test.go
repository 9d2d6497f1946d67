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
	"slices"
	"strings"
	"testing"
)

func TestTPCHSelectionTakesNumbersAndNames(t *testing.T) {
	w, err := Builtin(TPCH)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.ParseSelection("1-3, 5,7-8,2")
	if err != nil || !slices.Equal(got, []string{"q1", "q2", "q3", "q5", "q7", "q8"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := w.ParseSelection("q22,q1"); err != nil || !slices.Equal(got, []string{"q22", "q1"}) {
		t.Fatalf("names: got %v, %v", got, err)
	}
	if got, err := w.ParseSelection(""); err != nil || got != nil {
		t.Fatalf("an empty selection is every query: got %v, %v", got, err)
	}
	for _, bad := range []string{"0", "23", "3-1", "a", "1-x", "q23"} {
		if _, err := w.ParseSelection(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestBuiltinsAreValid(t *testing.T) {
	for _, name := range Builtins {
		w, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Validate(); err != nil {
			t.Errorf("built-in %s: %v", name, err)
		}
		if w.Name != name || len(w.Queries) == 0 {
			t.Errorf("built-in %s: name %q, %d queries", name, w.Name, len(w.Queries))
		}
	}
}

// A user's workload: every mistake the API cannot see is named, all at once.
func TestParseSaysWhatIsWrong(t *testing.T) {
	good := `
name: lake
tables:
  events: {path: events, hive: true}
  customers: {path: dim/customers.parquet}
queries:
  - name: daily-active
    sql: SELECT count(*) FROM events
  - name: by-country
    sql: SELECT country, count(*) FROM customers GROUP BY country
    polars: |
      def query(t):
          return t["customers"].group_by("country").len()
`
	w, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "lake" || !w.Tables["events"].Hive || len(w.Queries) != 2 || w.Queries[1].Polars == "" {
		t.Fatalf("parsed %+v", w)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"no queries":      {"tables: {t: {path: t}}\nqueries: []", "has no queries"},
		"empty query":     {"tables: {t: {path: t}}\nqueries: [{name: a, sql: '  '}]", `query "a" is empty`},
		"same name twice": {"tables: {t: {path: t}}\nqueries: [{name: a, sql: x}, {name: a, sql: y}]", `two queries are named "a"`},
		"unknown field":   {"tables: {t: {path: t}}\nqueries: [{name: a, sq1: x}]", "unknown field"},
		"escaping path":   {"tables: {t: {path: ../etc}}\nqueries: [{name: a, sql: x}]", "leaves the data root"},
		"absolute path":   {"tables: {t: {path: /etc}}\nqueries: [{name: a, sql: x}]", "relative to the data root"},
		"bad table name":  {"tables: {1t: {path: t}}\nqueries: [{name: a, sql: x}]", "SQL identifier"},
		"bad query name":  {"tables: {t: {path: t}}\nqueries: [{name: 'a b', sql: x}]", "a name is at most"},
		"too big":         {"# " + strings.Repeat("x", MaxBytes), "bytes; at most"},
	} {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
