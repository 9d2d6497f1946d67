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

package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// productRoots are the top-level directories whose sub-packages the README's layout names one by one;
// the others (charts, config, docs, hack, test) it names as a whole.
var productRoots = []string{"agent", "api", "bench", "cache", "cmd", "controllers", "internal", "worker"}

// readmeLayout reads the README's layout block: each top-level directory it names, with the
// sub-packages listed on the indented line below it.
func readmeLayout(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	_, block, _ := strings.Cut(rest, "```\n")
	block, _, _ = strings.Cut(block, "```")
	layout := map[string][]string{}
	last := ""
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(line, "  ") && last != "":
			layout[last] = append(layout[last], strings.Fields(line)...)
		case line != "":
			dir, _, _ := strings.Cut(line, " ")
			last = strings.TrimSuffix(dir, "/")
			layout[last] = nil
		}
	}
	return layout
}

// hasGo says whether dir, or a directory below it, holds Go files.
func hasGo(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return filepath.SkipAll
		}
		return err
	})
	return found
}

// subdirs are the directories right under dir, sorted; with goOnly, those holding Go code only.
func subdirs(t *testing.T, dir string, goOnly bool) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || name == "bin" || name == "testdata" {
			continue
		}
		if !goOnly || hasGo(filepath.Join(dir, name)) {
			out = append(out, name)
		}
	}
	return out
}

// TestReadmeLayoutMatchesTheTree fails when a top-level directory, or a package of the product's,
// is missing from the README's layout, or named there but gone.
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	layout := readmeLayout(t)
	var named []string
	for dir := range layout {
		named = append(named, dir)
	}
	slices.Sort(named)
	if tree := subdirs(t, "..", false); !slices.Equal(named, tree) {
		t.Errorf("the README's layout names %v; the tree's top-level directories are %v", named, tree)
	}
	for _, root := range productRoots {
		listed := slices.Sorted(slices.Values(layout[root]))
		if tree := subdirs(t, filepath.Join("..", root), true); !slices.Equal(listed, tree) {
			t.Errorf("the README lists the packages of %s/ as %v; the tree has %v", root, listed, tree)
		}
	}
}

// TestShippedBinariesLinkNoTestCode: the test servers and probes live under test/ and in their own
// binary (test/cmd/pqcache-testkit), never in what users install.
func TestShippedBinariesLinkNoTestCode(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../cmd/pqcache", "../cmd/kubectl-pqcache").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/pqcache/pqcache/test/") || strings.HasSuffix(pkg, "/controllers/testenv") {
			t.Errorf("a shipped binary links %s", pkg)
		}
	}
}
