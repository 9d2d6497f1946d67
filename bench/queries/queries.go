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

// Package queries holds the 22 PDS-H queries: TPC-H's, written from the specification with its
// validation substitution parameters, over tables named as in TPC-H.
package queries

import (
	"embed"
	"fmt"
)

//go:embed q*.sql polars/*.py
var files embed.FS

// Count is the number of queries.
const Count = 22

// SQL returns query n (1-22).
func SQL(n int) (string, error) {
	if n < 1 || n > Count {
		return "", fmt.Errorf("query %d: PDS-H has queries 1 to %d", n, Count)
	}
	b, err := files.ReadFile(fmt.Sprintf("q%02d.sql", n))
	return string(b), err
}

// Polars returns query n's Polars form: Python defining query(t) over the tables as LazyFrames, in
// the plan shape of polars-benchmark's queries/polars (written here from the specification and the
// SQL, not copied). Every query has one: the lazy API is how Polars' users write queries, and what
// polars-benchmark measures; Polars' SQL interface runs the SQL forms too (bench/polars tests both).
func Polars(n int) (string, error) {
	if n < 1 || n > Count {
		return "", fmt.Errorf("query %d: PDS-H has queries 1 to %d", n, Count)
	}
	b, err := files.ReadFile(fmt.Sprintf("polars/q%d.py", n))
	return string(b), err
}

// Tables are the eight TPC-H tables.
var Tables = []string{"customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"}
