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

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/spark"
)

// sparkFlags are where the Spark engine lives, for a run by hand.
type sparkFlags struct{ dir, python, jars string }

func (s *sparkFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.dir, "spark-dir", "", "With --engine spark: the directory of run.py (default: $"+spark.EnvDir+", ../lib/pqcache/spark beside this binary, the checkout's bench/spark, or "+spark.ImageDir+").")
	f.StringVar(&s.python, "spark-python", "", "With --engine spark: the Python interpreter that has PySpark (default: $"+spark.EnvPython+", the venv beside run.py, the checkout's "+spark.CheckoutVenv+" (make spark-env), or python3 on PATH).")
	f.StringVar(&s.jars, "spark-jars", "", "With --engine spark: the directory of the jars s3a:// needs (default: $"+spark.EnvJars+", jars beside run.py, or the checkout's "+spark.CheckoutJars+").")
}

// sparkIsolation is the isolation a Spark run uses: session, which the engine defaults to, since one
// application runs every query of an iteration; process isolation asked for by name is refused (a JVM
// and a Spark application per query would time their start-up, not the query).
func sparkIsolation(cmd *cobra.Command, a *wire.BenchArgs) error {
	if a.Engine != "spark" || a.Isolation == wire.IsolationSession {
		return nil
	}
	if f := cmd.Flags().Lookup("isolation"); f != nil && f.Changed {
		return fmt.Errorf("--engine spark runs every query of an iteration in one Spark application: --isolation %s is not supported, use session", a.Isolation)
	}
	a.Isolation = wire.IsolationSession
	return nil
}
