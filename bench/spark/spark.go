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

// Package spark is pqcache's built-in Spark engine: PySpark running the workload's SQL, as Spark's
// users run it. A small Python program kept beside this file (run.py, printing rows with bench/canon's
// canon.py, which the Polars engine shares) starts one Spark application per iteration and runs every query of it in turn (session
// isolation only: a JVM and an application per query would time their start-up, not the query). PySpark
// is pinned with hashes in requirements.txt and installed into a virtual environment by
// hack/spark-env.sh (`make spark-env`: bin/spark-venv), the jars s3a:// needs by hack/spark-jars.sh
// (bin/spark-jars, pinned in jars.txt); the engine image keeps them at /usr/local/lib/pqcache/spark.
// This package finds the program, the interpreter and the jars, and starts the Python process as a
// bench.Engine, so that bench times it, samples its memory (the process tree: Python and its JVM) and
// digests its rows exactly as it does DuckDB's.
package spark

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/pyfind"
)

// Environment variables the engine reads, or sets for run.py.
const (
	// EnvDir names the directory holding run.py.
	EnvDir = "PQCACHE_SPARK_DIR"
	// EnvPython names the Python interpreter that has PySpark installed.
	EnvPython = "PQCACHE_SPARK_PYTHON"
	// EnvJars names the directory of the jars s3a:// needs (hadoop-aws, the AWS SDK bundle).
	EnvJars = "PQCACHE_SPARK_JARS"
	// EnvMaster is Spark's master: local[N] by default, k8s://... in a Kubernetes run.
	EnvMaster = "PQCACHE_SPARK_MASTER"
	// EnvConf names a file of extra Spark settings (key=value lines) that run.py applies last: the
	// Kubernetes runner passes the executors' settings this way.
	EnvConf = "PQCACHE_SPARK_CONF"
)

// Where the program, its interpreter and the jars are, when neither a flag nor the environment says.
const (
	// ImageDir is where the engine image keeps run.py, and canon.py beside it.
	ImageDir = "/usr/local/lib/pqcache/spark"
	// ImageVenv is the image's virtual environment, relative to the program's directory.
	ImageVenv = "venv"
	// ImageJars is the image's directory of s3a jars, relative to the program's directory.
	ImageJars = "jars"
	// CheckoutVenv is the environment `make spark-env` makes, relative to the module root.
	CheckoutVenv = "bin/spark-venv"
	// CheckoutJars is where `make spark-env` puts the s3a jars, relative to the module root.
	CheckoutJars = "bin/spark-jars"
	// Package is the Python distribution the interpreter must have.
	Package = "pyspark"
)

// Engine runs every query of an iteration as `PYTHON run.py --workload FILE --queries NAME,...`: one
// Spark application per iteration.
type Engine struct {
	// Python is the interpreter that has PySpark; Dir the directory of run.py; Jars the directory of
	// the s3a jars ("": none, and s3a:// does not work) (see Find).
	Python, Dir, Jars string
	// Master is Spark's master ("": $PQCACHE_SPARK_MASTER, else local[Threads], else local[*]).
	Master string
	// Threads is local mode's task slots (0: one per CPU the JVM sees).
	Threads int
	// ConfFile is a file of extra Spark settings ("": $PQCACHE_SPARK_CONF, if set).
	ConfFile string
}

// Name is "spark".
func (Engine) Name() string { return "spark" }

// Sessions is true: run.py runs every query it is given in one application.
func (Engine) Sessions() bool { return true }

// Command returns the Python process that runs inv's queries in one Spark application. S3 is reached
// as the resolved workload's s3 block says, with the credentials of the inherited environment.
func (e Engine) Command(ctx context.Context, inv bench.Invocation) (*exec.Cmd, error) {
	queries := inv.Queries
	if len(queries) == 0 {
		queries = []string{inv.Query}
	}
	// -B: no bytecode written beside run.py; -s and -E: no user site-packages or PYTHONPATH, so the
	// pinned PySpark is the one imported.
	args := []string{"-B", "-s", "-E", filepath.Join(e.Dir, "run.py"), "--workload", inv.Workload, "--queries", strings.Join(queries, ",")}
	cmd := exec.CommandContext(ctx, e.Python, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.env()...)
	return cmd, nil
}

// MasterURL is the master the application runs on: Master, else $PQCACHE_SPARK_MASTER, else local
// mode with Threads task slots (local[*]: one per CPU).
func (e Engine) MasterURL() string {
	if m := cmp.Or(e.Master, os.Getenv(EnvMaster)); m != "" {
		return m
	}
	if e.Threads > 0 {
		return "local[" + strconv.Itoa(e.Threads) + "]"
	}
	return "local[*]"
}

// env is what the engine adds to the inherited environment for run.py.
func (e Engine) env() []string {
	env := []string{EnvMaster + "=" + e.MasterURL()}
	if e.Jars != "" {
		env = append(env, EnvJars+"="+e.Jars)
	}
	if e.ConfFile != "" {
		env = append(env, EnvConf+"="+e.ConfFile)
	}
	return env
}

// Find locates the program, the interpreter and the jars, and checks that PySpark is installed.
//
// The program's directory is dir (a flag) or $PQCACHE_SPARK_DIR, else where an install or a checkout
// keeps it relative to this binary (../lib/pqcache/spark; the repository's bench/spark for
// bin/pqcache), else the image's /usr/local/lib/pqcache/spark. The interpreter is python (a flag) or
// $PQCACHE_SPARK_PYTHON, else the venv beside the program (the image's), else the checkout's
// bin/spark-venv, else python3 on PATH. The jars are jars (a flag) or $PQCACHE_SPARK_JARS, else the
// jars directory beside the program (the image's), else the checkout's bin/spark-jars.
func Find(ctx context.Context, dir, python, jars string) (Engine, error) {
	found, err := findDir(dir)
	if err != nil {
		return Engine{}, err
	}
	e := Engine{Dir: found, Python: findPython(found, python), Jars: findJars(found, jars)}
	return e, e.Check(ctx)
}

// program is where this engine's run.py and interpreter are looked for.
var program = pyfind.Program{Title: "the Spark engine", Subdir: "spark", DirFlag: "--spark-dir", EnvDir: EnvDir, EnvPython: EnvPython,
	ImageDir: ImageDir, ImageVenv: ImageVenv, CheckoutVenv: CheckoutVenv}

// findDir is the first candidate directory with run.py; one given explicitly must have it.
func findDir(dir string) (string, error) { return program.Dir(dir) }

// findPython is the interpreter for the program in dir.
func findPython(dir, python string) string { return program.Python(dir, python) }

// findJars is the jars directory for the program in dir: explicit, else the first that exists, else
// none (local files still work; s3a:// then fails, naming the missing class).
func findJars(dir, jars string) string {
	if j := cmp.Or(jars, os.Getenv(EnvJars)); j != "" {
		return j
	}
	for _, d := range []string{filepath.Join(dir, ImageJars), filepath.Join(dir, "..", "..", CheckoutJars)} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return filepath.Clean(d)
		}
	}
	return ""
}

// Check says whether the interpreter runs and has PySpark, and what to do when it does not.
func (e Engine) Check(ctx context.Context) error {
	_, err := e.Version(ctx)
	return err
}

// Version is the installed PySpark version, from the interpreter's package metadata (starting a JVM
// would take seconds).
func (e Engine) Version(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, e.Python, "-s", "-E", "-c", "import importlib.metadata as m; print(m.version("+strconv.Quote(Package)+"))")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && strings.Contains(stderr.String(), "PackageNotFoundError") {
			return "", fmt.Errorf("%s is not installed for %s: run `make spark-env` (hack/spark-env.sh) and use %s/bin/python, or set %s", Package, e.Python, CheckoutVenv, EnvPython)
		}
		return "", fmt.Errorf("python (%s) does not run: %w: %s; run `make spark-env` or set %s", e.Python, err, strings.TrimSpace(stderr.String()), EnvPython)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("%s reported no version of %s", e.Python, Package)
	}
	return v, nil
}
