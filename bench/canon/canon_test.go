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

package canon

import (
	"math"
	"math/big"
	"testing"
	"time"
)

func TestValue(t *testing.T) {
	day := time.Date(1995, 3, 15, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, "NULL"},
		{int32(42), "42"},
		{int64(-7), "-7"},
		{uint32(14876), "14876"},
		{big.NewInt(123456789), "123456789"},
		{0.125, "0.13"},   // half away from zero, not half-even
		{-0.125, "-0.13"}, // and symmetric
		{2.675, "2.68"},   // its shortest digits are 2.675, though the binary value is below
		{1.0 / 3, "0.33"},
		{-0.001, "0.00"}, // no negative zero
		{1e-7, "0.00"},
		{1.5e21, "1500000000000000000000.00"},
		{float32(0.1), "0.10"},
		{math.NaN(), "NaN"},
		{math.Inf(-1), "-Infinity"},
		{day, "1995-03-15"},
		{"Customer#000000001", "Customer#000000001"},
		{"a|b\\c\nd", `a\|b\\c\nd`},
		{[]byte("MAIL"), "MAIL"},
		{true, "true"},
	} {
		if got := Value(c.in); got != c.want {
			t.Errorf("Value(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		unscaled int64
		scale    int
		want     string
	}{
		{11604929800, 6, "11604.93"}, // 11604.929800
		{1160492500, 4, "116049.25"},
		{1160492450, 4, "116049.25"}, // 116049.2450: an exact half cent rounds up
		{-1160492450, 4, "-116049.25"},
		{5, 4, "0.00"},
		{-50, 4, "-0.01"},
		{-49, 4, "0.00"},
		{1234, 2, "12.34"},
		{7, 0, "7.00"},
		{3, -2, "300.00"},
	} {
		if got := Decimal(big.NewInt(c.unscaled), c.scale); got != c.want {
			t.Errorf("Decimal(%d, %d) = %q, want %q", c.unscaled, c.scale, got, c.want)
		}
	}
	if got := Decimal(nil, 2); got != Null {
		t.Errorf("Decimal(nil) = %q", got)
	}
}

func TestRound(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0.00", "17": "17.00", ".5": "0.50", "0.994": "0.99", "0.995": "1.00", "-0.995": "-1.00",
		"99.9951": "100.00", "+1.234": "1.23", "-0.004": "0.00",
	} {
		if got := Round(in); got != want {
			t.Errorf("Round(%q) = %q, want %q", in, got, want)
		}
	}
}
