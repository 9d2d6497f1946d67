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

package polars

import (
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/enginetest"
	"github.com/pqcache/pqcache/bench/workload"
)

// TestMain lets the conformance suite re-execute this test binary as DuckDB, the reference engine.
func TestMain(m *testing.M) { enginetest.Main(m) }

// engine is the Polars engine of this checkout: run.py beside this file and the interpreter Find
// chooses ($PQCACHE_POLARS_PYTHON, which make test sets, else bin/polars-venv), with two threads. The
// test fails, saying what to run, without it.
func engine(t *testing.T) Engine {
	t.Helper()
	e, err := Find(t.Context(), ".", "")
	if err != nil {
		t.Fatalf("the Polars engine cannot run here: %v", err)
	}
	e.Threads = 2
	return e
}

// TestConformance runs the engine conformance suite on Polars' in-memory engine, in both isolations:
// the queries' Polars forms and, apart, their SQL through Polars' SQL interface. Besides the failures
// every engine shares, a Polars form can fail in Python or return something other than a LazyFrame,
// and a Datetime answer is refused by canon.py.
func TestConformance(t *testing.T) {
	e := engine(t)
	e.PolarsEngine = "in-memory"
	enginetest.Run(t, enginetest.Engine{Engine: e, Isolations: []string{wire.IsolationProcess, wire.IsolationSession}, PolarsForms: true,
		Failures: []enginetest.Failure{
			enginetest.TimestampRefused,
			{Query: workload.Query{Name: "datetime", Polars: "def query(t):\n    return t[\"lineitem\"].select(pl.col(\"l_shipdate\").cast(pl.Datetime)).head(1)\n"},
				Want: "a timestamp (Datetime"},
			{Query: workload.Query{Name: "python-error", Polars: "def query(t):\n    return t[\"lineitem\"].select(no_such_name)\n"}, Want: "NameError"},
			{Query: workload.Query{Name: "not-lazy", Polars: "def query(t):\n    return t[\"lineitem\"].head(1).collect()\n"}, Want: "want a polars.LazyFrame"},
		}})
}
