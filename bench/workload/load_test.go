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

package workload

import (
	"strings"
	"testing"
)

func TestConfigMapWorkload(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		ok              bool
		err             string
	}{
		{"workload.yaml key", "kind: ConfigMap\ndata:\n  other: x\n  workload.yaml: q\n", "q", true, ""},
		{"the only key", "kind: ConfigMap\ndata:\n  mine.yaml: q\n", "q", true, ""},
		{"no workload key", "kind: ConfigMap\ndata:\n  a: x\n  b: y\n", "", false, "the ConfigMap has no key workload.yaml (keys: a, b)"},
		{"a workload itself", "queries: []\n", "", false, ""},
	} {
		got, ok, err := configMapWorkload([]byte(tc.doc))
		if got != tc.want || ok != tc.ok || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%s: %q, %v, %v; want %q, %v, %q", tc.name, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	if _, err := Load("/nonexistent/workload.yaml"); err == nil || !strings.HasPrefix(err.Error(), "--workload /nonexistent/workload.yaml: not a built-in workload (") {
		t.Errorf("got %v", err)
	}
	if w, err := Load("tpch"); err != nil || w == nil {
		t.Errorf("tpch: %v", err)
	}
}
