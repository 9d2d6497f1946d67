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

// Package canon is the canonical row format in which the built-in engines (DuckDB through this
// package; Polars and Spark through canon.py beside it, its one Python twin, which both Python engines'
// run.py import) print a query's answer, so that bench's order-insensitive digest of the rows is equal
// across engines exactly when the answers are. Engines differ in types (DuckDB's HUGEINT sums, Polars'
// u32 counts, Spark's widened floats; exact decimals against floats) and in how they print them; the
// format fixes one spelling per value:
//
//	row       fields in the query's SELECT order, separated by "|", one row per line
//	NULL      NULL
//	integer   decimal digits, no fraction: 42, -7
//	decimal   its exact digits rounded to two places: 1234.57
//	float     its shortest round-trip digits rounded to two places: 0.33 (NaN, Infinity, -Infinity)
//	date      YYYY-MM-DD
//	string    as is, with \ | CR LF escaped as \\ \| \r \n
//	boolean   true, false
//
// Rounding is half away from zero on the decimal digits (2.345 → 2.35, -2.345 → -2.35) and a value
// that rounds to zero has no sign (-0.001 → 0.00). Two places is TPC-H's answer precision. A number
// one engine computes exactly (a DECIMAL sum) and the other as a float prints the same unless it lies
// within an ulp of a half cent; the built-in engines compute money exactly, so only averages and
// ratios, floats in all of them, carry that risk.
package canon

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Null is how a NULL prints.
const Null = "NULL"

// Sep separates the fields of a row.
const Sep = "|"

// Places is the number of decimal places of decimals and floats.
const Places = 2

// Row joins canonical fields into one line (without the newline).
func Row(fields []string) string { return strings.Join(fields, Sep) }

// Value formats the Go value of a database/sql column: nil, integers, *big.Int, floats, string,
// []byte, time.Time and bool. Engine-specific types (DuckDB's DECIMAL) go through Decimal first.
func Value(v any) string {
	switch v := v.(type) {
	case nil:
		return Null
	case *big.Int:
		if v == nil {
			return Null
		}
		return v.String()
	case float64:
		return Float(v)
	case float32:
		return float(float64(v), 32)
	case string:
		return String(v)
	case []byte:
		return String(string(v))
	case time.Time:
		return Date(v)
	case bool:
		return strconv.FormatBool(v)
	}
	switch rv := reflect.ValueOf(v); {
	case rv.CanInt():
		return strconv.FormatInt(rv.Int(), 10)
	case rv.CanUint():
		return strconv.FormatUint(rv.Uint(), 10)
	}
	return String(fmt.Sprint(v))
}

// Decimal formats an exact decimal, unscaled × 10^-scale.
func Decimal(unscaled *big.Int, scale int) string {
	if unscaled == nil {
		return Null
	}
	s := unscaled.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	} else if scale < 0 {
		s += strings.Repeat("0", -scale)
	}
	if neg {
		s = "-" + s
	}
	return Round(s)
}

// Float formats a float64.
func Float(v float64) string { return float(v, 64) }

func float(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return Round(strconv.FormatFloat(v, 'f', -1, bits))
}

// Round rounds a plain decimal string ("-123.4567", "17") to Places places, half away from zero.
func Round(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	frac += strings.Repeat("0", max(Places+1-len(frac), 0))
	cents, ok := new(big.Int).SetString(whole+frac[:Places], 10)
	if !ok {
		return String(s)
	}
	if frac[Places] >= '5' {
		cents.Add(cents, big.NewInt(1))
	}
	if cents.Sign() == 0 {
		neg = false
	}
	digits := cents.String()
	if len(digits) <= Places {
		digits = strings.Repeat("0", Places+1-len(digits)) + digits
	}
	out := digits[:len(digits)-Places] + "." + digits[len(digits)-Places:]
	if neg {
		return "-" + out
	}
	return out
}

// Date formats a date as YYYY-MM-DD (and a timestamp with its time of day, which no PDS-H query
// returns).
func Date(t time.Time) string {
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

var escaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "\r", `\r`, "\n", `\n`)

// String escapes a string's separator, backslash and line breaks.
func String(s string) string { return escaper.Replace(s) }
