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

package benchrun

import (
	"strings"
	"testing"

	"github.com/pqcache/pqcache/bench/workload"
)

func TestCopyTooBig(t *testing.T) {
	small := runWorkload{w: &workload.Workload{Name: "w", Queries: []workload.Query{{Name: "q", SQL: "SELECT 1"}}}}
	if why := copyTooBig(small); why != "" {
		t.Fatalf("a small workload refused: %s", why)
	}
	big := runWorkload{w: &workload.Workload{Name: "w", Queries: []workload.Query{{Name: "q", SQL: "SELECT '" + strings.Repeat("x", maxWorkloadCopy) + "'"}}}}
	if why := copyTooBig(big); !strings.Contains(why, "must fit a ConfigMap") {
		t.Fatalf("copyTooBig = %q", why)
	}
	builtin := runWorkload{builtin: "tpch", w: big.w}
	if copyTooBig(builtin) != "" {
		t.Fatal("a built-in workload is never copied")
	}
}
