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

// How pqcache writes sizes and wall times for people, in one place: here because every side (the
// workers' output, the reports, the controllers' status, the kubectl plugin) imports this package
// and the same figure should read the same wherever it is shown.

import (
	"strconv"
	"time"
)

// binary scales n to its largest binary unit: the value and the unit's index (0: bytes, 1: Ki, ...).
func binary(n int64) (float64, int) {
	v, i := float64(n), 0
	for (v >= 1024 || v <= -1024) && i < 6 {
		v, i = v/1024, i+1
	}
	return v, i
}

// Bytes writes a size in IEC binary units for text and reports: "512 B", "12 KiB", "34.9 MiB",
// "1.50 GiB" (whole KiB, a tenth of a MiB, a hundredth of larger units: about three significant
// figures for the sizes that matter).
func Bytes(n int64) string {
	v, i := binary(n)
	prec := 2
	switch i {
	case 0:
		return strconv.FormatInt(n, 10) + " B"
	case 1:
		prec = 0
	case 2:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + "KMGTPE"[i-1:i] + "iB"
}

// Quantity writes a size as kubectl writes capacities (`kubectl get pvc`), for what kubectl shows
// (status printer columns, the kubectl plugin): a whole number from 10 up ("22Mi"), one decimal
// below ("1.4Gi"), bytes with no unit ("800").
func Quantity(n int64) string {
	v, i := binary(n)
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	if i == 0 || v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64) + units[i]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i]
}

// Duration writes a wall time for people: milliseconds under a second ("420ms"), else rounded to
// whole seconds ("1m23s").
func Duration(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return d.Round(time.Second).String()
}
