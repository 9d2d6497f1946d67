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
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// reasonSources are the packages that declare condition reasons: api/wire those that the worker, the
// sync engine and the event sources decide, api/v1alpha1 those that only the controllers decide.
var reasonSources = []string{"../api/wire", "../api/v1alpha1"}

// undocumented are reasons declared in the API that troubleshooting.md leaves out on purpose, and why.
var undocumented = map[string]string{
	"DatasetNotReady": "declared in the API, but no controller sets it",
}

// declaredReasons reads every exported Reason* constant of reasonSources from the Go source, and
// returns its value by constant name. A reason whose value is not a string literal, or a string
// declared twice, fails the test: each reason is written once and used by that name.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	byName, byValue := map[string]string{}, map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range reasonSources {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for name, value := range reasonConsts(t, fset, f) {
				where := filepath.Base(dir) + "." + name
				if prev, ok := byValue[value]; ok {
					t.Errorf("reason %q is declared twice, as %s and %s: declare it once", value, prev, where)
				}
				byValue[value], byName[where] = where, value
			}
		}
	}
	return byName
}

// reasonConsts returns the exported Reason* constants of one file by name.
func reasonConsts(t *testing.T, fset *token.FileSet, f *ast.File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Reason") || !id.IsExported() {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: %s is not a string literal: use the one constant that declares the reason", fset.Position(id.Pos()), id.Name)
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[id.Name] = v
			}
		}
	}
	return out
}

var quoted = regexp.MustCompile("`([A-Za-z]+)`")

// TestTroubleshootingCoversEveryReason fails when a reason is declared in the API and not named in
// troubleshooting.md (in a table row, or in the text for the reasons the tables leave out), and when a
// table row names a reason the API does not declare.
func TestTroubleshootingCoversEveryReason(t *testing.T) {
	declared := declaredReasons(t)
	if len(declared) < 40 {
		t.Fatalf("found only %d reasons in %v: the parser misses some", len(declared), reasonSources)
	}
	named := map[string]bool{}
	for _, m := range quoted.FindAllStringSubmatch(troubleshooting, -1) {
		named[m[1]] = true
	}
	values := map[string]bool{}
	for _, where := range slices.Sorted(maps.Keys(declared)) {
		r := declared[where]
		values[r] = true
		_, skip := undocumented[r]
		switch {
		case skip && named[r]:
			t.Errorf("%s (%q) is documented now: drop it from undocumented", where, r)
		case !skip && !named[r]:
			t.Errorf("%s (%q) is not in troubleshooting.md: add a row (or name it in the text)", where, r)
		}
	}
	for r := range undocumented {
		if !values[r] {
			t.Errorf("undocumented lists %q, which no api package declares", r)
		}
	}
	for _, line := range strings.Split(troubleshooting, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		if r := strings.Trim(cells[0], "`"); !values[r] {
			t.Errorf("troubleshooting.md has a row for %q, which no api package declares", r)
		} else if _, ok := Troubleshooting(r); !ok {
			t.Errorf("Troubleshooting(%q) does not find its row", r)
		}
	}
}
