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

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1536: "2 KiB", 512 << 10: "512 KiB", 36_595_302: "34.9 MiB",
		120 << 20: "120.0 MiB", 3 << 30: "3.00 GiB", 1503238554: "1.40 GiB", 5 << 40: "5.00 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestQuantityAndDuration holds what kubectl shows (status.manifest.size, status.duration): moved from
// the controllers' humanBytes and humanDuration with their assertions.
func TestQuantityAndDuration(t *testing.T) {
	for b, want := range map[int64]string{0: "0", 999: "999", 1536: "1.5Ki", 22 << 20: "22Mi", 1503238554: "1.4Gi", 5 << 40: "5.0Ti"} {
		if got := Quantity(b); got != want {
			t.Errorf("Quantity(%d) = %s, want %s", b, got, want)
		}
	}
	for ms, want := range map[int64]string{420: "420ms", 1499: "1s", 83_400: "1m23s", 7_200_000: "2h0m0s"} {
		if got := Duration(time.Duration(ms) * time.Millisecond); got != want {
			t.Errorf("Duration(%d ms) = %s, want %s", ms, got, want)
		}
	}
}
