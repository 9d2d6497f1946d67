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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunsThePinnedPolars: the interpreter the tests (and pqcache bench in a checkout) find has
// exactly the Polars that requirements.txt pins, so a test never passes on another version.
func TestRunsThePinnedPolars(t *testing.T) {
	lock, err := os.ReadFile("requirements.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^polars==(\S+)`).FindSubmatch(lock)
	if m == nil {
		t.Fatal("requirements.txt pins no polars version")
	}
	got, err := engine(t).Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got != string(m[1]) {
		t.Errorf("the engine runs polars %s; requirements.txt pins %s: run make polars-env", got, m[1])
	}
	for _, pkg := range []string{"polars", "polars-runtime-32"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pkg) + `==\S+ \\\n\s+--hash=sha256:[0-9a-f]{64}`).Match(lock) {
			t.Errorf("requirements.txt does not pin %s with a sha256 hash", pkg)
		}
	}
}

// TestFindFailsClearly: without run.py, without an interpreter, or with one that lacks Polars, Find
// says what is missing and what to run.
func TestFindFailsClearly(t *testing.T) {
	if _, err := Find(t.Context(), t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no run.py") {
		t.Errorf("Find in a directory without run.py: %v", err)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "python")
	if _, err := Find(t.Context(), dir, missing); err == nil || !strings.Contains(err.Error(), "does not run") || !strings.Contains(err.Error(), "make polars-env") {
		t.Errorf("Find with a missing interpreter: %v", err)
	}

	// A real interpreter without Polars: an empty virtual environment of the engine's own Python.
	base, err := exec.CommandContext(t.Context(), engine(t).Python, "-c", "import sys; print(sys._base_executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.CommandContext(t.Context(), strings.TrimSpace(string(base)), "-m", "venv", "--without-pip", empty).CombinedOutput(); err != nil {
		t.Fatalf("making an empty venv: %v: %s", err, out)
	}
	_, err = Find(t.Context(), dir, filepath.Join(empty, "bin", "python"))
	if err == nil || !strings.Contains(err.Error(), "polars is not installed") || !strings.Contains(err.Error(), "make polars-env") {
		t.Errorf("Find with an interpreter without Polars: %v", err)
	}
}

// TestFindsTheImageLayout: a directory laid out as the engine image lays it out (run.py with a venv
// beside it) is found with its own interpreter, whatever PATH has; an explicit interpreter wins.
func TestFindsTheImageLayout(t *testing.T) {
	dir := t.TempDir()
	python := filepath.Join(dir, ImageVenv, "bin", "python")
	if err := os.MkdirAll(filepath.Dir(python), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "run.py"), python} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvPython, "")
	t.Setenv(EnvDir, dir)
	found, err := findDir("")
	if err != nil {
		t.Fatal(err)
	}
	if got := findPython(found, ""); found != dir || got != python {
		t.Errorf("an image layout: dir %s, python %s; want %s, %s", found, got, dir, python)
	}
	t.Setenv(EnvPython, "/opt/python3")
	if got := findPython(found, ""); got != "/opt/python3" {
		t.Errorf("with %s set: python %s", EnvPython, got)
	}
}
