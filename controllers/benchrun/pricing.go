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
	"math/big"
	"sort"

	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// costMicros estimates what one engine × configuration × input cost, in millionths of the pricing
// currency: (cores × coreSecond + GiB × gibSecond) × wall seconds × placementMultiplier, plus
// transferGB for every GB read from the bucket: the staged bytes and readBytes, what the queries read
// from S3 (the cache volume itself costs no transfer). Prices are decimal strings (validated by the API),
// computed exactly with rationals. nil without pricing.
func costMicros(p *datav1alpha1.Pricing, cfg datav1alpha1.ResourceConfig, r datav1alpha1.BenchResult, readBytes int64) *int64 {
	if p == nil {
		return nil
	}
	rat := func(s, def string) *big.Rat {
		if s == "" {
			s = def
		}
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			return new(big.Rat)
		}
		return v
	}
	seconds := new(big.Rat).SetFrac64(r.WallMillis+r.StageMillis, 1000)
	cores := new(big.Rat).SetFrac64(cfg.CPU.MilliValue(), 1000)
	gib := new(big.Rat).SetFrac64(cfg.Memory.Value(), 1<<30)
	compute := new(big.Rat).Add(new(big.Rat).Mul(cores, rat(p.CoreSecond, "0")), new(big.Rat).Mul(gib, rat(p.GiBSecond, "0")))
	compute.Mul(compute, seconds)
	compute.Mul(compute, rat(p.PlacementMultiplier, "1"))
	transfer := new(big.Rat).Mul(new(big.Rat).SetFrac64(r.StagedBytes+readBytes, 1_000_000_000), rat(p.TransferGB, "0"))
	total := new(big.Rat).Add(compute, transfer)
	return roundMicros(total.Mul(total, big.NewRat(1_000_000, 1)))
}

// roundMicros rounds a non-negative amount to the nearest integer, exactly; nil when it does not fit
// in an int64 (no estimate is better than a wrapped one).
func roundMicros(v *big.Rat) *int64 {
	q, rem := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).CmpAbs(v.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return nil
	}
	n := q.Int64()
	return &n
}

// breakEvenRuns is how many runs it takes for the cache to pay for itself: filling it costs the data
// set's transfer once (syncBytes × transferGB), after which each run on the volume saves the difference
// between its cost on S3 and on the volume. It is the figure of the first engine × configuration (by
// name) that has both a volume and an s3 result; nil when none has, or when its volume run is not
// cheaper.
func breakEvenRuns(p *datav1alpha1.Pricing, results []datav1alpha1.BenchResult, syncBytes int64) *int64 {
	return firstBreakEven(breakEvens(p, results, syncBytes))
}

// firstBreakEven is the break-even of the first of breakEvens' keys, nil when there is none.
func firstBreakEven(keys []string, runs map[string]*int64) *int64 {
	if len(keys) == 0 {
		return nil
	}
	return runs[keys[0]]
}

// breakEvens computes the break-even of every engine × configuration ("engine/config") that has both a
// volume and an s3 result, and returns those keys sorted; a key's value is nil when its volume run is
// not cheaper, or the figure does not fit.
func breakEvens(p *datav1alpha1.Pricing, results []datav1alpha1.BenchResult, syncBytes int64) ([]string, map[string]*int64) {
	if p == nil {
		return nil, nil
	}
	keys, saved := savings(results)
	runs := map[string]*int64{}
	for _, key := range keys {
		runs[key] = runsToRecoup(fillMicros(p, syncBytes), saved[key])
	}
	return keys, runs
}

// savings is, for every engine × configuration ("engine/config") with a priced volume and s3 result,
// what a run on the volume saves against one on s3 (negative when it costs more); keys sorted.
func savings(results []datav1alpha1.BenchResult) ([]string, map[string]int64) {
	costs := map[string]map[string]*int64{}
	for _, r := range results {
		if r.CostMicros == nil {
			continue
		}
		key := costKey(r)
		if costs[key] == nil {
			costs[key] = map[string]*int64{}
		}
		costs[key][r.Input] = r.CostMicros
	}
	var keys []string
	saved := map[string]int64{}
	for key, byInput := range costs {
		vol, s3 := byInput[string(datav1alpha1.InputVolume)], byInput[string(datav1alpha1.InputS3)]
		if vol == nil || s3 == nil {
			continue
		}
		keys = append(keys, key)
		saved[key] = *s3 - *vol
	}
	sort.Strings(keys)
	return keys, saved
}

// costKey groups the results whose costs compare: one engine on one configuration.
func costKey(r datav1alpha1.BenchResult) string { return r.Engine + "/" + r.Config }

// fillMicros is what filling the cache costs, exactly: bytes / 1e9 × transferGB × 1e6 micros.
func fillMicros(p *datav1alpha1.Pricing, syncBytes int64) *big.Rat {
	price, ok := new(big.Rat).SetString(p.TransferGB)
	if !ok {
		price = new(big.Rat)
	}
	return new(big.Rat).Mul(new(big.Rat).SetFrac64(syncBytes, 1_000), price)
}

// runsToRecoup is ceil(fill / saving), at least 1; nil when nothing is saved or it does not fit.
func runsToRecoup(fill *big.Rat, saving int64) *int64 {
	if saving <= 0 {
		return nil
	}
	n, rem := new(big.Int).QuoRem(fill.Num(), new(big.Int).Mul(fill.Denom(), big.NewInt(saving)), new(big.Int))
	if rem.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() {
		return nil
	}
	return ptr.To(max(1, n.Int64()))
}
