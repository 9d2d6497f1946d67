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

// Package polars is pqcache's built-in Polars engine: Python Polars, as Polars' users run it. A small
// Python program kept beside this file (run.py, printing rows with bench/canon's canon.py, which the
// Spark engine shares) runs one query of a resolved workload: its Polars form (Python defining query(t) over the tables as
// LazyFrames; TPC-H's are bench/queries/polars/qN.py) or else its SQL through Polars' SQL interface.
// Polars itself is pinned with hashes in requirements.txt and installed into a virtual environment by
// hack/python-env.sh (`make polars-env`: bin/polars-venv) or into the engine image
// (hack/image-rootfs-polars.sh). This package finds the program and the interpreter, and starts one
// Python process per query as a bench.Engine, so that bench times it, samples its memory and digests
// its rows exactly as it does DuckDB's. It needs no cgo: the static pqcache-runner runs Polars too.
package polars

import (
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

// Environment variables the engine reads or sets.
const (
	// EnvDir names the directory holding run.py.
	EnvDir = "PQCACHE_POLARS_DIR"
	// EnvPython names the Python interpreter that has Polars installed.
	EnvPython = "PQCACHE_POLARS_PYTHON"
	// EnvEngine is run.py's engine when --engine is not given: in-memory, streaming or auto.
	EnvEngine = "PQCACHE_POLARS_ENGINE"
)

// Where the program and its interpreter are, when neither a flag nor the environment says.
const (
	// ImageDir is where the engine image keeps run.py (Dockerfile.polars, hack/image-rootfs-polars.sh).
	ImageDir = "/usr/local/lib/pqcache/polars"
	// ImageVenv is the image's virtual environment, relative to the program's directory.
	ImageVenv = "venv"
	// CheckoutVenv is the environment `make polars-env` makes, relative to the module root.
	CheckoutVenv = "bin/polars-venv"
	// Package is the Python distribution the interpreter must have.
	Package = "polars"
)

// Engines are Polars' engines run.py accepts.
var Engines = []string{"in-memory", "streaming", "auto"}

// Engine runs queries as `PYTHON run.py --workload FILE --queries NAME,...`: one per process in
// process isolation, every query of an iteration in session isolation.
type Engine struct {
	// Python is the interpreter that has Polars; Dir the directory of run.py (see Find).
	Python, Dir string
	// Threads sets POLARS_MAX_THREADS (0: Polars' default, one per CPU it may use).
	Threads int
	// PolarsEngine is Polars' engine: in-memory, streaming or auto ("": run.py's default, which is
	// $PQCACHE_POLARS_ENGINE, else in-memory).
	PolarsEngine string
	// ForceAsync sets POLARS_FORCE_ASYNC=1: the async (object store) reader for local files too.
	ForceAsync bool
}

// Name is "polars".
func (Engine) Name() string { return "polars" }

// Command returns the Python process that runs one query. S3 is reached as the resolved workload's
// s3 block says, with the credentials of the inherited environment (AWS_ACCESS_KEY_ID, ...).
func (e Engine) Command(ctx context.Context, inv bench.Invocation) (*exec.Cmd, error) {
	if e.PolarsEngine != "" && !validEngine(e.PolarsEngine) {
		return nil, fmt.Errorf("polars engine %q: want %s", e.PolarsEngine, strings.Join(Engines, ", "))
	}
	// -B: no bytecode written beside run.py (a checkout stays clean, an image is read-only); -s and
	// -E: no user site-packages or PYTHONPATH, so the pinned Polars is the one imported.
	queries := inv.Queries
	if len(queries) == 0 {
		queries = []string{inv.Query}
	}
	args := []string{"-B", "-s", "-E", filepath.Join(e.Dir, "run.py"), "--workload", inv.Workload, "--queries", strings.Join(queries, ",")}
	if e.PolarsEngine != "" {
		args = append(args, "--engine", e.PolarsEngine)
	}
	cmd := exec.CommandContext(ctx, e.Python, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.env()...)
	return cmd, nil
}

func validEngine(s string) bool {
	for _, e := range Engines {
		if s == e {
			return true
		}
	}
	return false
}

// env is what the engine adds to the inherited environment: Polars reads both when it loads.
func (e Engine) env() []string {
	var env []string
	if e.Threads > 0 {
		env = append(env, "POLARS_MAX_THREADS="+strconv.Itoa(e.Threads))
	}
	if e.ForceAsync {
		env = append(env, "POLARS_FORCE_ASYNC=1")
	}
	return env
}

// Find locates the program and the interpreter, and checks that Polars is installed.
//
// The program's directory is dir (a flag) or $PQCACHE_POLARS_DIR, else where an install or a checkout
// keeps it relative to this binary (../lib/pqcache/polars; the repository's bench/polars for
// bin/pqcache), else the image's /usr/local/lib/pqcache/polars. The interpreter is python (a flag) or
// $PQCACHE_POLARS_PYTHON, else the virtual environment beside the program (the image's venv), else the
// checkout's bin/polars-venv, else python3 on PATH.
func Find(ctx context.Context, dir, python string) (Engine, error) {
	found, err := findDir(dir)
	if err != nil {
		return Engine{}, err
	}
	e := Engine{Dir: found, Python: findPython(found, python)}
	return e, e.Check(ctx)
}

// program is where this engine's run.py and interpreter are looked for.
var program = pyfind.Program{Title: "the Polars engine", Subdir: "polars", DirFlag: "--polars-dir", EnvDir: EnvDir, EnvPython: EnvPython,
	ImageDir: ImageDir, ImageVenv: ImageVenv, CheckoutVenv: CheckoutVenv}

// findDir is the first candidate directory with run.py; one given explicitly must have it.
func findDir(dir string) (string, error) { return program.Dir(dir) }

// findPython is the interpreter for the program in dir.
func findPython(dir, python string) string { return program.Python(dir, python) }

// Check says whether the interpreter runs and has Polars, and what to do when it does not.
func (e Engine) Check(ctx context.Context) error {
	_, err := e.Version(ctx)
	return err
}

// Version is the installed Polars version, from the interpreter's package metadata (importing
// Polars itself would take longer than reading it).
func (e Engine) Version(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, e.Python, "-s", "-E", "-c", "import importlib.metadata as m; print(m.version("+strconv.Quote(Package)+"))")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && strings.Contains(stderr.String(), "PackageNotFoundError") {
			return "", fmt.Errorf("%s is not installed for %s: run `make polars-env` (hack/python-env.sh) and use bin/polars-venv/bin/python, or set %s", Package, e.Python, EnvPython)
		}
		return "", fmt.Errorf("python (%s) does not run: %w: %s; run `make polars-env` or set %s", e.Python, err, strings.TrimSpace(stderr.String()), EnvPython)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("%s reported no version of %s", e.Python, Package)
	}
	return v, nil
}
