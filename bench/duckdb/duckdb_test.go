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

package duckdb

import (
	"context"
	"path/filepath"
	"testing"
)

func TestTPCHExtensionLoads(t *testing.T) {
	ctx := context.Background()
	ext := filepath.Join(t.TempDir(), "tpch.duckdb_extension")
	if err := BuildTPCHExtension(ctx, ext); err != nil {
		t.Fatal(err)
	}
	db, err := Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "LOAD '"+ext+"'"); err != nil {
		t.Fatalf("loading the tpch extension: %v", err)
	}
	if _, err := db.ExecContext(ctx, "CALL dbgen(sf=0.01)"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM lineitem").Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("lineitem rows at SF 0.01: %d", n)
}
