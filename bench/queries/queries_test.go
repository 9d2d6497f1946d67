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

package queries

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestEveryQueryHasBothForms: each of the 22 queries has its SQL and its Polars form (a Python
// function query(t)), and no stray file is embedded beside them.
func TestEveryQueryHasBothForms(t *testing.T) {
	def := regexp.MustCompile(`(?m)^def query\(t\):$`)
	for n := 1; n <= Count; n++ {
		sql, err := SQL(n)
		if err != nil || !strings.Contains(strings.ToUpper(sql), "SELECT") {
			t.Errorf("q%d: SQL %q: %v", n, sql, err)
		}
		py, err := Polars(n)
		if err != nil {
			t.Errorf("q%d: no Polars form: %v", n, err)
			continue
		}
		if !def.MatchString(py) {
			t.Errorf("q%d: the Polars form defines no query(t)", n)
		}
		if !strings.Contains(py, fmt.Sprintf("PDS-H q%d,", n)) {
			t.Errorf("q%d: the Polars form's header names another query", n)
		}
	}
	for _, bad := range []int{0, Count + 1} {
		if _, err := Polars(bad); err == nil {
			t.Errorf("Polars(%d) succeeded", bad)
		}
	}
	py, err := fs.Glob(files, "polars/*.py")
	if err != nil || len(py) != Count {
		t.Errorf("embedded Polars forms: %v (%v), want %d", py, err, Count)
	}
}
