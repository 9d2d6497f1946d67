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

package duckdb_test

import (
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/enginetest"
)

// TestMain lets the conformance suite re-execute this test binary as a DuckDB query process.
func TestMain(m *testing.M) { enginetest.Main(m) }

// TestConformance runs the engine conformance suite on the built-in DuckDB, as `pqcache bench-query`
// runs it (two threads; httpfs from $PQCACHE_HTTPFS_EXTENSION for s3://), in both isolations.
func TestConformance(t *testing.T) {
	enginetest.Run(t, enginetest.Engine{Engine: enginetest.DuckDB(), Isolations: []string{wire.IsolationProcess, wire.IsolationSession}})
}
