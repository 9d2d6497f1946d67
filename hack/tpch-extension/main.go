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

// Command tpch-extension builds DuckDB's tpch extension for the DuckDB linked into pqcache, from the
// static library in the Go module cache: `go run ./hack/tpch-extension OUT` (make tpch-extension).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pqcache/pqcache/bench/duckdb"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tpch-extension OUT")
		os.Exit(2)
	}
	if err := duckdb.BuildTPCHExtension(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "tpch-extension:", err)
		os.Exit(1)
	}
}
