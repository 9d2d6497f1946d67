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

// Package workload is what a benchmark runs: named queries over named tables of a data set. TPC-H
// (PDS-H) is one built-in workload among three (tpch, scan, paging); users bring their own as YAML
// or JSON, from a ConfigMap or a BenchRun's spec.
//
// A workload names its tables by where they are under the data root (a file, a folder, a glob, Hive
// partitions). Before any query runs, Resolve turns each table into the explicit list of its files,
// local paths or s3:// URLs, with the fresh prefixes read from elsewhere (staged, or the bucket), and
// says which tables have no files at all. Every engine's query process then reads the same files: the
// Resolved workload, written as JSON, is the whole contract between the runner and an engine
// (docs/bench.md describes the format for command engines).
//
// YAML is read with sigs.k8s.io/yaml, a YAML library (YAML to JSON, then encoding/json), not a
// Kubernetes client: this package, like the rest of bench, runs without a cluster.
package workload

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"
)

// Workload is a set of named queries over named tables.
type Workload struct {
	// Name identifies the workload in reports: tpch, scan, paging, or the user's.
	Name string `json:"name,omitempty"`
	// Tables maps each table name the queries use to where its files are.
	Tables map[string]Table `json:"tables"`
	// Queries run in this order.
	Queries []Query `json:"queries"`
}

// Table is where a table's Parquet files are, relative to the data root.
type Table struct {
	// Path is a file ("dim/customers.parquet"), a folder ("events": every *.parquet under it, or
	// events.parquet when that file exists, as TPC-H's tables are written flat or partitioned), or a
	// glob ("events/**/*.parquet", "orders/date=2026-12-*/*.parquet").
	Path string `json:"path"`
	// Hive reads key=value directories on the files' paths as columns.
	Hive bool `json:"hive,omitempty"`
	// FileRowNumber adds the column file_row_number, each row's position in its file (for paging
	// by row ranges; over a table of one file it numbers the table's rows).
	FileRowNumber bool `json:"fileRowNumber,omitempty"`
}

// Query is one named query: SQL that every SQL engine runs (DuckDB, Polars' SQL interface), and
// optionally the form a Polars user would write instead.
type Query struct {
	Name string `json:"name"`
	// SQL reads the workload's tables by name.
	SQL string `json:"sql,omitempty"`
	// Polars is Python that defines query(t), where t maps each table name to a polars.LazyFrame,
	// returning a LazyFrame; pl, date, datetime and timedelta are imported. Polars runs it instead of
	// the SQL when it is given.
	Polars string `json:"polars,omitempty"`
}

// Limits a workload must keep: the runner hands each query process the whole workload, and a
// BenchRun's status holds a result per query.
const (
	MaxQueries    = 200
	MaxTables     = 100
	MaxBytes      = 512 << 10
	maxNameLength = 63
)

var (
	queryName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Parse reads a workload written as YAML or JSON, and validates it. Unknown fields are errors: a
// misspelt "sq1:" must not run nothing in silence.
func Parse(data []byte) (*Workload, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("the workload is %d bytes; at most %d are read", len(data), MaxBytes)
	}
	var w Workload
	if err := yaml.UnmarshalStrict(data, &w); err != nil {
		return nil, fmt.Errorf("reading the workload: %w", err)
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

// Validate says, all at once, what is wrong with a workload that no data could fix: names, empty
// queries, paths that leave the data root, sizes. A table the data lacks is Resolve's to find.
func (w *Workload) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(w.Queries) == 0 {
		bad("the workload has no queries")
	}
	if len(w.Queries) > MaxQueries {
		bad("the workload has %d queries; at most %d are allowed", len(w.Queries), MaxQueries)
	}
	if len(w.Tables) > MaxTables {
		bad("the workload has %d tables; at most %d are allowed", len(w.Tables), MaxTables)
	}
	seen := map[string]bool{}
	for i, q := range w.Queries {
		switch {
		case q.Name == "":
			bad("query %d has no name", i+1)
		case len(q.Name) > maxNameLength || !queryName.MatchString(q.Name):
			bad("query %q: a name is at most %d letters, digits, '.', '_' or '-', starting with a letter or digit", q.Name, maxNameLength)
		case seen[q.Name]:
			bad("two queries are named %q: query names must be unique", q.Name)
		}
		seen[q.Name] = true
		if strings.TrimSpace(q.SQL) == "" && strings.TrimSpace(q.Polars) == "" {
			bad("query %q is empty: give it sql (and, if you like, a polars form)", q.Name)
		}
		if r, ok := controlChar(q.SQL + q.Polars); ok {
			bad("query %q has the control character %U: only tabs and line ends may be in a query", q.Name, r)
		}
	}
	for name, t := range w.Tables {
		if !tableName.MatchString(name) || len(name) > maxNameLength {
			bad("table %q: a table name is a SQL identifier (letters, digits and '_', not starting with a digit), at most %d long", name, maxNameLength)
		}
		if err := checkPath(t.Path); err != nil {
			bad("table %s: %v", name, err)
		}
	}
	return errors.Join(errs...)
}

// controlChar returns the first control character of s other than tab and line ends, or a
// noncharacter. A workload is handed on as JSON, which writes them as they are (U+0085 among them),
// and read again as YAML, which folds U+0085 into a space and refuses the others: the query would
// change, or fail, between the BenchRun and the runner (found by FuzzParse).
func controlChar(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' || r == 0xfffe || r == 0xffff {
			return r, true
		}
	}
	return 0, false
}

// checkPath refuses a table path that is empty or leaves the data root.
func checkPath(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return errors.New("path is empty")
	case strings.ContainsFunc(p, func(r rune) bool { _, bad := controlChar(string(r)); return bad }):
		return fmt.Errorf("path %q has a control character", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q must be relative to the data root", p)
	case slices.Contains(strings.Split(path.Clean(p), "/"), ".."):
		return fmt.Errorf("path %q leaves the data root", p)
	}
	return nil
}

// Select returns the queries named, in the order given, or all of them for none.
func (w *Workload) Select(names []string) ([]Query, error) {
	if len(names) == 0 {
		return w.Queries, nil
	}
	byName := make(map[string]Query, len(w.Queries))
	for _, q := range w.Queries {
		byName[q.Name] = q
	}
	var (
		out     []Query
		missing []string
	)
	for _, n := range names {
		q, ok := byName[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		out = append(out, q)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("workload %s has no quer%s %s (it has %s)", w.Name, plural(len(missing), "y", "ies"), strings.Join(missing, ", "), strings.Join(w.QueryNames(), ", "))
	}
	return out, nil
}

// QueryNames are the workload's query names, in order.
func (w *Workload) QueryNames() []string {
	names := make([]string, len(w.Queries))
	for i, q := range w.Queries {
		names[i] = q.Name
	}
	return names
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ParseSelection reads a list of query names ("q1,q6", "count-one"), or for TPC-H also numbers and
// ranges ("1-22", "1,3,5-7"), and checks each against the workload. Empty selects every query.
func (w *Workload) ParseSelection(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" || s == "all" {
		return nil, nil
	}
	var names []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if w.Name == TPCH && part != "" && part[0] >= '0' && part[0] <= '9' {
			ns, err := parseNumbers(part, len(w.Queries))
			if err != nil {
				return nil, fmt.Errorf("query list %q: %w", s, err)
			}
			for _, n := range ns {
				names = append(names, TPCHQuery(n))
			}
			continue
		}
		names = append(names, part)
	}
	names = dedupe(names)
	if _, err := w.Select(names); err != nil {
		return nil, err
	}
	return names, nil
}

// parseNumbers reads "7" or "3-9", each number in 1..max.
func parseNumbers(part string, maxQuery int) ([]int, error) {
	lo, hi, isRange := strings.Cut(part, "-")
	a, err := strconv.Atoi(lo)
	if err != nil {
		return nil, fmt.Errorf("%q is not a number", lo)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil {
			return nil, fmt.Errorf("%q is not a number", hi)
		}
	}
	if a < 1 || b > maxQuery || a > b {
		return nil, fmt.Errorf("%q is outside 1-%d", part, maxQuery)
	}
	var out []int
	for q := a; q <= b; q++ {
		out = append(out, q)
	}
	return out, nil
}

// dedupe keeps the first of each name, in order.
func dedupe(names []string) []string {
	seen := map[string]bool{}
	return slices.DeleteFunc(names, func(n string) bool {
		dup := seen[n]
		seen[n] = true
		return dup
	})
}
