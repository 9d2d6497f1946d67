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

package spark

import (
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/enginetest"
)

// TestMain lets the conformance suite re-execute this test binary as DuckDB, the reference engine.
func TestMain(m *testing.M) { enginetest.Main(m) }

// engine is the Spark engine of this checkout: run.py beside this file, the interpreter and jars Find
// chooses ($PQCACHE_SPARK_PYTHON and $PQCACHE_SPARK_JARS, which make test sets, else bin/spark-venv
// and bin/spark-jars), in local mode with two task slots. The test fails, saying what to run,
// without it.
func engine(t *testing.T) Engine {
	t.Helper()
	e, err := Find(t.Context(), ".", "", "")
	if err != nil {
		t.Fatalf("the Spark engine cannot run here: %v", err)
	}
	if e.Jars == "" {
		t.Fatalf("no s3a jars: run `make spark-env` or set %s", EnvJars)
	}
	e.Threads = 2
	return e
}

// TestConformance runs the engine conformance suite on Spark in local mode: session isolation only
// (one application per iteration), s3a:// for s3:// (five of the queries), and canon.py refusing a
// timestamp answer. A query may take long on two task slots of a loaded machine, the first of an
// application most.
func TestConformance(t *testing.T) {
	enginetest.Run(t, enginetest.Engine{Engine: engine(t), Isolations: []string{wire.IsolationSession},
		Failures: []enginetest.Failure{enginetest.TimestampRefused}, QueryTimeout: 10 * time.Minute,
		// A Spark query takes seconds even at SF 0.01: over s3:// five plans of lineitem's two halves.
		S3Queries: []string{"q1", "q3", "q6", "q12", "q14"}})
}
