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

package canon_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/bench/canon"
)

// canonScript hands each list of values to canon.py as the Python values an engine hands over for a
// column of that type (a float, a float32 widened to a float, a decimal.Decimal, a date, ...), through
// column_kind on the engine's type name and format_rows: the path every result column of both Python
// engines takes. It also answers column_kind for every type name it is given, or the error it raises.
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
    "uints": ("UInt64", v["uints"]),
    "dates": ("date", [date.fromisoformat(d) for d in v["dates"]]),
    "bools": ("boolean", [True, False, None]),
}
out = {}
for kind, (type_name, values) in columns.items():
    out[kind] = list(canon.format_rows([[x] for x in values], [canon.column_kind(kind, type_name)]))
out["rows"] = list(canon.format_rows([(1, "a|b", None, 2.5)], ["int", "string", "float", "float"]))
kinds = {}
for type_name in v["types"]:
    try:
        kinds[type_name] = canon.column_kind("c", type_name)
    except ValueError as e:
        kinds[type_name] = "error: " + str(e)
json.dump({"values": out, "kinds": kinds}, sys.stdout)
`

// interpreters are the Pythons that run canon.py: each Python engine's (make test sets both), else
// python3 on PATH. canon.py needs nothing but the standard library, so any of them runs it.
func interpreters(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, env := range []string{"PQCACHE_POLARS_PYTHON", "PQCACHE_SPARK_PYTHON"} {
		if py := os.Getenv(env); py != "" {
			out[env] = py
		}
	}
	if len(out) == 0 {
		py, err := exec.LookPath("python3")
		if err != nil {
			t.Fatal("no Python to run canon.py: set PQCACHE_POLARS_PYTHON or PQCACHE_SPARK_PYTHON (make test does), or put python3 on PATH")
		}
		out["python3"] = py
	}
	return out
}

// TestCanonPyMatchesGo feeds the same values to canon.py, as the Python values of each engine type,
// and to this package: every one prints alike, so an answer DuckDB and a Python engine agree on
// digests alike. Floats include the specials, halves and values near them, the extremes and thousands
// of random ones; float32s print from their own shortest digits; decimals from their exact digits,
// also when Python's Decimal holds them with an exponent ("1E+3", "0E-8").
func TestCanonPyMatchesGo(t *testing.T) {
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
	strs := []string{"plain", "a|b", `back\slash`, "line\nbreak\r", "", "ünïcode|"}
	ints := []int64{0, -7, 42, math.MinInt64, math.MaxInt64}
	uints := []uint64{0, math.MaxUint64}
	dates := []string{"1995-03-15", "0001-01-01", "9999-12-31", "1970-01-01"}

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
	for _, s := range strs {
		want["strings"] = append(want["strings"], canon.String(s))
	}
	want["strings"] = append(want["strings"], canon.Null)
	for _, i := range ints {
		want["ints"] = append(want["ints"], canon.Value(i))
	}
	for _, u := range uints {
		want["uints"] = append(want["uints"], canon.Value(u))
	}
	for _, d := range dates {
		day, _ := time.Parse(time.DateOnly, d)
		want["dates"] = append(want["dates"], canon.Value(day))
	}
	want["bools"] = []string{canon.Value(true), canon.Value(false), canon.Null}
	want["rows"] = []string{canon.Row([]string{canon.Value(1), canon.Value("a|b"), canon.Null, canon.Value(2.5)})}

	in, err := json.Marshal(map[string]any{
		"floats": floats, "floats32": floats32, "decimals": decimals, "specials": []string{"nan", "inf", "-inf"},
		"strings": strs, "ints": ints, "uints": uints, "dates": dates, "types": typeNames(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, python := range interpreters(t) {
		t.Run(name, func(t *testing.T) {
			got := runCanonPy(t, python, in)
			for kind, values := range want {
				if len(got.Values[kind]) != len(values) {
					t.Errorf("%s: canon.py answered %d values, want %d", kind, len(got.Values[kind]), len(values))
					continue
				}
				for i, w := range values {
					if got.Values[kind][i] != w {
						t.Errorf("%s #%d: canon.py %q, bench/canon %q", kind, i, got.Values[kind][i], w)
					}
				}
			}
			checkKinds(t, got.Kinds)
		})
	}
}

// kinds are the kinds canon.py gives each engine's type names: Spark's simpleString() and typeName()
// spellings, Polars' str(dtype); "" for a timestamp, which has no canonical form.
var kinds = map[string]string{
	// Spark
	"tinyint": "int", "smallint": "int", "int": "int", "integer": "int", "bigint": "int", "long": "int",
	"double": "float", "float": "float32", "decimal(15,2)": "decimal", "decimal(38,4)": "decimal",
	"string": "string", "varchar(25)": "string", "char(1)": "string", "date": "date", "boolean": "bool",
	"timestamp": "", "timestamp_ntz": "",
	// Polars
	"Int8": "int", "Int32": "int", "Int64": "int", "Int128": "int", "UInt32": "int", "UInt64": "int",
	"Float64": "float", "Float32": "float32", "Decimal(precision=38, scale=4)": "decimal",
	"String": "string", "Categorical": "string", "Enum(categories=['a', 'b'])": "string",
	"Date": "date", "Boolean": "bool", "Datetime(time_unit='us', time_zone=None)": "",
}

func typeNames() []string {
	out := make([]string, 0, len(kinds)+2)
	for n := range kinds {
		out = append(out, n)
	}
	return append(out, "interval day", "Duration(time_unit='us')")
}

// checkKinds: every type name maps to its kind; a timestamp is refused as one, naming the column and
// saying what to do; a type the format does not know is refused too.
func checkKinds(t *testing.T, got map[string]string) {
	t.Helper()
	for name, kind := range kinds {
		switch {
		case kind == "" && !strings.Contains(got[name], "a timestamp ("+name+") has no canonical form; cast it to a date or a string"):
			t.Errorf("column_kind(%q) = %q, want it refused as a timestamp", name, got[name])
		case kind != "" && got[name] != kind:
			t.Errorf("column_kind(%q) = %q, want %q", name, got[name], kind)
		}
	}
	for _, name := range []string{"interval day", "Duration(time_unit='us')"} {
		if !strings.HasPrefix(got[name], "error: column c: type "+name+" has no canonical form") {
			t.Errorf("column_kind(%q) = %q, want it refused", name, got[name])
		}
	}
}

// plainDecimal writes the exponent forms Python's Decimal may hold ("1E+3", "0E-8") as plain digits,
// the form canon.Round takes.
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

type canonPyAnswer struct {
	Values map[string][]string `json:"values"`
	Kinds  map[string]string   `json:"kinds"`
}

// runCanonPy runs canonScript with python on in, importing canon.py from this directory as the
// engines' run.py does in a checkout.
func runCanonPy(t *testing.T, python string, in []byte) canonPyAnswer {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), python, "-B", "-s", "-E", "-c", canonScript)
	cmd.Dir = "."
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("canon.py (%s): %v: %s", python, err, stderr.String())
	}
	var got canonPyAnswer
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got
}
