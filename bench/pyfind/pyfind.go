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

// Package pyfind locates a Python engine's program and interpreter: the Polars and Spark engines keep
// their run.py in the same places (a flag or an environment variable, beside an install, in a
// checkout, in their image) and their interpreter in a venv beside it or in the checkout's bin/. Each
// run.py imports the canonical row format both share, canon.py, from beside it (an image, an install)
// or else from the checkout's bench/canon, so the program's directory is all that is looked for.
package pyfind

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Program is where one engine's program lives.
type Program struct {
	Title        string // "the Spark engine", for messages
	Subdir       string // "spark": ../lib/pqcache/<Subdir> beside an install, ../bench/<Subdir> in a checkout
	DirFlag      string // "--spark-dir"
	EnvDir       string // the environment variable naming the program's directory
	EnvPython    string // the environment variable naming the interpreter
	ImageDir     string // the program's directory in the engine's image
	ImageVenv    string // the image's venv, relative to the program's directory
	CheckoutVenv string // the checkout's venv, relative to the module root
}

// Dir is the first candidate directory with run.py; one given explicitly (dir, else EnvDir) must
// have it.
func (p Program) Dir(dir string) (string, error) {
	if explicit := cmp.Or(dir, os.Getenv(p.EnvDir)); explicit != "" {
		if _, err := os.Stat(filepath.Join(explicit, "run.py")); err != nil { //nolint:gosec // G703: the directory the user names by flag or environment, on their own machine
			return "", fmt.Errorf("%s %s has no run.py: %w", p.Title, explicit, err)
		}
		return filepath.Abs(explicit)
	}
	var candidates []string
	if self, err := os.Executable(); err == nil {
		bin := filepath.Dir(self)
		candidates = append(candidates, filepath.Join(bin, "..", "lib", "pqcache", p.Subdir), filepath.Join(bin, "..", "bench", p.Subdir))
	}
	candidates = append(candidates, p.ImageDir)
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "run.py")); err == nil {
			return filepath.Abs(c)
		}
	}
	return "", fmt.Errorf("%s (run.py) is not in %s: pass %s or set %s", p.Title, strings.Join(candidates, ", "), p.DirFlag, p.EnvDir)
}

// Python is the interpreter for the program in dir: python, else EnvPython, else the first venv that
// exists (the image's beside the program, the checkout's), else python3 on PATH (the engine's Check
// then says whether it has what it needs).
func (p Program) Python(dir, python string) string {
	if py := cmp.Or(python, os.Getenv(p.EnvPython)); py != "" {
		return py
	}
	for _, venv := range []string{filepath.Join(dir, p.ImageVenv), filepath.Join(dir, "..", "..", p.CheckoutVenv)} {
		py := filepath.Join(venv, "bin", "python")
		if _, err := os.Stat(py); err == nil {
			return filepath.Clean(py)
		}
	}
	if py, err := exec.LookPath("python3"); err == nil {
		return py
	}
	return "python3"
}
