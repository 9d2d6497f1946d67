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
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// sizeSuffixes are the suffixes of a Kubernetes quantity that make sense for a number of bytes, with
// their multipliers: binary (Ki ... Ei) and decimal (k ... E).
var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// ParseSize reads a size in bytes written as a Kubernetes quantity ("16Mi", "1.5Gi", "8M",
// "16777216", "2e6"), as the API writes spec.sync.partSize into a worker's --part-size, rounding a
// fraction of a byte up as a quantity's Value does. It is here, not in apimachinery, because the
// sync engine and the contract import nothing of Kubernetes.
func ParseSize(s string) (int64, error) {
	num, mult := s, big.NewRat(1, 1)
	for _, sf := range sizeSuffixes {
		if n, ok := strings.CutSuffix(s, sf.suffix); ok {
			num, mult = n, new(big.Rat).SetInt64(sf.mult)
			break
		}
	}
	if i := strings.IndexAny(num, "eE"); i > 0 && num == s {
		exp, ok := new(big.Int).SetString(num[i+1:], 10)
		if !ok || exp.Sign() < 0 || exp.Cmp(big.NewInt(18)) > 0 {
			return 0, fmt.Errorf("size %q: bad exponent", s)
		}
		num, mult = num[:i], new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), exp, nil))
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok || !isDecimal(num) {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional suffix such as Ki, Mi or Gi", s)
	}
	v.Mul(v, mult)
	q, r := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, errors.New("size " + s + " is too large")
	}
	return q.Int64(), nil
}

// isDecimal says whether s is digits with at most one decimal point between them: big.Rat alone
// would also take signs, fractions and hexadecimal.
func isDecimal(s string) bool {
	whole, frac, _ := strings.Cut(s, ".")
	digits := func(t string) bool {
		return t != "" && strings.Trim(t, "0123456789") == ""
	}
	return digits(whole) && (frac == "" && !strings.HasSuffix(s, ".") || digits(frac))
}

// ParseS3URL splits a sync's source, s3://BUCKET/PREFIX, into its bucket and its key prefix.
func ParseS3URL(s string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", fmt.Errorf("source %q must look like s3://bucket/prefix", s)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("source %q has no bucket", s)
	}
	return bucket, prefix, nil
}
