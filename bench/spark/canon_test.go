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

package spark

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/bench/canon"
)

// canonScript renders each list of values as the Python values PySpark's collect() hands over for
// a column of that Spark type (float, float32 widened to a double, decimal.Decimal, date, ...),
// through canon.py's column_kind and format_rows, the path every result column takes.
const canonScript = `
import json, sys
from datetime import date
from decimal import Decimal
import canon
v = json.load(sys.stdin)
specials = [float(s) for s in v["specials"]]
columns = {
    "floats": ("double", v["floats"] + specials + [None]),
    "floats32": ("float", v["floats32"] + specials),
    "decimals": ("decimal(38,4)", [Decimal(s) for s in v["decimals"]]),
    "strings": ("string", v["strings"] + [None]),
    "ints": ("bigint", v["ints"]),
    "dates": ("date", [date.fromisoformat(d) for d in v["dates"]]),
    "bools": ("boolean", [True, False, None]),
}
out = {}
for kind, (type_name, values) in columns.items():
    out[kind] = list(canon.format_rows([[x] for x in values], [canon.column_kind(kind, type_name)]))
try:
    canon.column_kind("ts", "timestamp")
except ValueError as e:
    out["timestamp"] = [str(e)]
json.dump(out, sys.stdout)
`

// TestCanonMatchesGo feeds the same values to canon.py, as the Python values of each Spark type, and
// to bench/canon: every one prints alike, so an answer Spark and DuckDB agree on digests alike. A
// timestamp has no canonical form and is refused, as in the other engines.
func TestCanonMatchesGo(t *testing.T) {
	e := engine(t)
	rng := rand.New(rand.NewPCG(1, 2))
	floats := []float64{0, math.Copysign(0, -1), 0.125, -0.125, 2.675, 1.005, 1.0 / 3, -0.001, 1e-7, 5e-3, 4.999999e-3, 1.5e21,
		123456789.125, 56586554400.7312, 0.07, 100, -2.5e-5, math.MaxFloat64, math.SmallestNonzeroFloat64}
	for range 2000 {
		floats = append(floats, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(24)-6)))
	}
	floats32 := []float64{0.1, 0.125, 2.675, 1.005, 16777217, 3.4e38, 1e-7}
	for range 1000 {
		floats32 = append(floats32, float64(float32((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(16)-4)))))
	}
	decimals := []string{"0", "17", "-17.005", "11604.9298", "116049.2450", "-0.0049", "0.995", "99.9951", "-0.0050", "1E+3", "0E-8"}
	for range 500 {
		decimals = append(decimals, strconv.FormatInt(rng.Int64N(2e12)-1e12, 10)+"."+fmt.Sprintf("%04d", rng.IntN(10000)))
	}
	v := map[string]any{
		"floats": floats, "floats32": floats32, "decimals": decimals, "specials": []string{"nan", "inf", "-inf"},
		"strings": []string{"plain", "a|b", `back\slash`, "line\nbreak\r", "", "ünïcode|"},
		"ints":    []int64{0, -7, 42, math.MinInt64, math.MaxInt64},
		"dates":   []string{"1995-03-15", "0001-01-01", "9999-12-31", "1970-01-01"},
	}
	got := runCanon(t, e, v)

	want := map[string][]string{}
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, f := range append(append([]float64{}, floats...), specials...) {
		want["floats"] = append(want["floats"], canon.Float(f))
	}
	want["floats"] = append(want["floats"], canon.Null)
	for _, f := range append(append([]float64{}, floats32...), specials...) {
		want["floats32"] = append(want["floats32"], canon.Value(float32(f)))
	}
	for _, s := range decimals {
		want["decimals"] = append(want["decimals"], canon.Round(plainDecimal(s)))
	}
	for _, s := range v["strings"].([]string) {
		want["strings"] = append(want["strings"], canon.String(s))
	}
	want["strings"] = append(want["strings"], canon.Null)
	for _, i := range v["ints"].([]int64) {
		want["ints"] = append(want["ints"], canon.Value(i))
	}
	for _, d := range v["dates"].([]string) {
		day, _ := time.Parse(time.DateOnly, d)
		want["dates"] = append(want["dates"], canon.Value(day))
	}
	want["bools"] = []string{canon.Value(true), canon.Value(false), canon.Null}

	for kind, values := range want {
		if len(got[kind]) != len(values) {
			t.Errorf("%s: canon.py answered %d values, want %d", kind, len(got[kind]), len(values))
			continue
		}
		for i, w := range values {
			if got[kind][i] != w {
				t.Errorf("%s #%d: canon.py %q, bench/canon %q", kind, i, got[kind][i], w)
			}
		}
	}
	if ts := got["timestamp"]; len(ts) != 1 || !strings.Contains(ts[0], "a timestamp has no canonical form") {
		t.Errorf("a timestamp column: %q, want it refused", ts)
	}
}

// plainDecimal writes the exponent forms Python's Decimal may hold ("1E+3", "0E-8") as plain digits,
// the form bench/canon.Round takes.
func plainDecimal(s string) string {
	mant, exp, ok := strings.Cut(s, "E")
	if !ok {
		return s
	}
	n, _ := strconv.Atoi(exp)
	if n >= 0 {
		return mant + strings.Repeat("0", n)
	}
	return "0." + strings.Repeat("0", -n-1) + mant
}

// runCanon runs canonScript on v and returns its answer by kind.
func runCanon(t *testing.T, e Engine, v map[string]any) map[string][]string {
	t.Helper()
	in, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), e.Python, "-B", "-c", canonScript)
	cmd.Dir = e.Dir
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("canon.py: %v: %s", err, stderr.String())
	}
	var got map[string][]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got
}
