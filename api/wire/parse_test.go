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

package wire

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"16Mi": 16 << 20, "8Mi": 8 << 20, "1Gi": 1 << 30, "5Gi": 5 << 30, "16777216": 16 << 20, "1Ki": 1024,
		"1.5Gi": 3 << 29, "1536Ki": 1536 << 10, "8M": 8e6, "2e6": 2e6, "2E6": 2e6, "1k": 1000, "0.5": 1, "1E": 1e18, "0": 0,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Mi", "-1Mi", "+1Mi", "1/2", "0x10", "1.", ".5", "1.2.3", "16MiB", "16mi", "1e3Mi", "1e-3", "1e19", "9Ei", "16 Mi", "1m"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
