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

package peer

import "testing"

func TestRootsOf(t *testing.T) {
	roots, err := RootsOf([]string{"sales=/cache/sales", "tpch=/cache/t=1"})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := roots("tpch"); !ok || r != "/cache/t=1" {
		t.Fatalf("tpch: %q %v", r, ok)
	}
	if _, ok := roots("other"); ok {
		t.Fatal("an unnamed bucket is served")
	}
	for _, bad := range []string{"sales", "=/cache", "sales=", "a/b=/cache"} {
		if _, err := RootsOf([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
