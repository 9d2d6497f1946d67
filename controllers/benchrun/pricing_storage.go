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
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// What a cache costs over time: its storage per month, its refreshes per day, and when it has paid for
// itself at the run rate a BenchRun states. Everything here is exact (rationals, rounded once to
// integer micros) and a pure function of the facts gathered from the Dataset, its claim and the
// prices, so it is tested without a cluster.

const (
	// hoursPerMonth is the month storage is billed by: AWS prices EBS and S3 per GB-month of 730 hours.
	hoursPerMonth = 730
	// storageClassDefault prices a claim that names no StorageClass, or one the prices do not list.
	storageClassDefault = "default"
	// storageClassNodeDisk prices the per-node copies of a Dataset with spec.replicas.
	storageClassNodeDisk = "node-disk"
)

// cacheFacts is what the cache's costs are computed from, read off the Dataset and its claim.
type cacheFacts struct {
	class  string // the StorageClass priced (storageClassDefault, storageClassNodeDisk or a name)
	copies int32
	bytes  int64 // one copy's size: the manifest's bytes
	// syncs per window is the schedule's rate (both 0 without a schedule).
	syncs  int64
	window time.Duration
	// last is the last successful sync's figures; nil when none is known.
	last *datav1alpha1.SyncResult
	// worker is the sync worker's requests, for the compute a sync uses.
	worker corev1.ResourceList
}

// cacheFactsOf reads the facts off a Dataset; class is its claim's StorageClass ("" when the claim
// names none). The refresh rate is the schedule's: pqcache keeps only the last sync, so a day's
// refreshes are estimated as that sync × the syncs the schedule starts in a day.
func cacheFactsOf(ds *datav1alpha1.Dataset, class string, worker corev1.ResourceRequirements) cacheFacts {
	f := cacheFacts{class: class, copies: 1}
	if f.class == "" {
		f.class = storageClassDefault
	}
	if ds.Spec.Replicas != nil {
		f.class, f.copies = storageClassNodeDisk, 1
		if ds.Status.Replicas != nil && ds.Status.Replicas.Desired > 0 {
			f.copies = ds.Status.Replicas.Desired
		}
	}
	if ds.Status.Manifest != nil {
		f.bytes = ds.Status.Manifest.Bytes
	}
	if ls := ds.Status.LastSync; ls != nil && ls.Result == datav1alpha1.SyncSucceeded {
		f.last = ls
	}
	if sched, err := cron.ParseStandard(ds.Spec.Refresh.Schedule); err == nil && ds.Spec.Refresh.Schedule != "" && !ds.Spec.Refresh.Suspend {
		f.syncs, f.window = scheduleRate(sched)
	}
	f.worker = worker.Requests
	if ds.Spec.Sync.Resources != nil {
		f.worker = ds.Spec.Sync.Resources.Requests
	}
	return f
}

// rateEpoch is where schedules are counted from: a Monday at midnight UTC, so that the count does
// not depend on when the run happens to look.
var rateEpoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// scheduleRate counts the syncs a schedule starts: over a week, which is exact for every schedule
// that fires at least daily or on weekdays; a schedule that fires less than once a day (monthly,
// weekly) is counted over 52 weeks instead.
func scheduleRate(sched cron.Schedule) (syncs int64, window time.Duration) {
	count := func(window time.Duration, most int64) int64 {
		end, n := rateEpoch.Add(window), int64(0)
		for t := sched.Next(rateEpoch.Add(-time.Second)); !t.IsZero() && t.Before(end) && n < most; t = sched.Next(t) {
			n++
		}
		return n
	}
	week := 7 * 24 * time.Hour
	// @every 1m, the most frequent schedule the API admits, starts 10080 syncs a week.
	if n := count(week, 7*24*60+1); n >= 7 {
		return n, week
	}
	return count(52*week, 52*7), 52 * week
}

// cacheCost prices the facts: storage per month and refreshes per day, each rounded once. The
// refresh figures are absent without a known successful sync; with no schedule they are zero.
func cacheCost(p *datav1alpha1.Pricing, f cacheFacts) *datav1alpha1.CacheCost {
	c := &datav1alpha1.CacheCost{StorageClass: f.class, Copies: f.copies, StorageBytes: f.bytes * int64(f.copies)}
	c.StorageMicrosPerMonth = roundMicros(storageMonthMicros(p, c.StorageBytes))
	perDay := syncsPerDay(f)
	if perDay.Sign() > 0 {
		c.SyncIntervalSeconds = (int64(f.window/time.Second) + f.syncs/2) / f.syncs
	}
	if f.last == nil {
		return c
	}
	transfer, compute, requests := refreshDayMicros(p, f, perDay)
	c.RefreshBytesPerDay = *roundOr0(new(big.Rat).Mul(new(big.Rat).SetInt64(f.last.BytesCopied), perDay))
	c.TransferMicrosPerDay, c.ComputeMicrosPerDay, c.RequestMicrosPerDay = roundMicros(transfer), roundMicros(compute), roundMicros(requests)
	total := new(big.Rat).Add(transfer, compute)
	c.RefreshMicrosPerDay = roundMicros(total.Add(total, requests))
	return c
}

// syncsPerDay is the schedule's rate, exactly: syncs / window in days.
func syncsPerDay(f cacheFacts) *big.Rat {
	if f.syncs == 0 || f.window <= 0 {
		return new(big.Rat)
	}
	return new(big.Rat).SetFrac(big.NewInt(f.syncs*int64(24*time.Hour)), big.NewInt(int64(f.window)))
}

// storageMonthMicros is bytes / 1e9 × storageGBMonth × 1e6.
func storageMonthMicros(p *datav1alpha1.Pricing, bytes int64) *big.Rat {
	return new(big.Rat).Mul(new(big.Rat).SetFrac64(bytes, 1_000), price(p.StorageGBMonth))
}

// refreshDayMicros prices a day of refreshes, each the last sync: its download at transferGB, its
// duration at the worker's requests, its GET and LIST requests per 1000.
func refreshDayMicros(p *datav1alpha1.Pricing, f cacheFacts, perDay *big.Rat) (transfer, compute, requests *big.Rat) {
	micros := func(v *big.Rat) *big.Rat { return v.Mul(v, perDay).Mul(v, big.NewRat(1_000_000, 1)) }
	transfer = micros(new(big.Rat).Mul(new(big.Rat).SetFrac64(f.last.BytesCopied, 1_000_000_000), price(p.TransferGB)))
	cores := new(big.Rat).SetFrac64(f.worker.Cpu().MilliValue(), 1000)
	gib := new(big.Rat).SetFrac64(f.worker.Memory().Value(), 1<<30)
	perSecond := new(big.Rat).Add(new(big.Rat).Mul(cores, price(p.CoreSecond)), new(big.Rat).Mul(gib, price(p.GiBSecond)))
	compute = micros(perSecond.Mul(perSecond, new(big.Rat).SetFrac64(f.last.DurationMillis, 1000)))
	gets := new(big.Rat).Mul(new(big.Rat).SetFrac64(f.last.GetRequests, 1000), price(p.GetPer1000))
	lists := new(big.Rat).Mul(new(big.Rat).SetFrac64(f.last.ListRequests, 1000), price(p.ListPer1000))
	requests = micros(gets.Add(gets, lists))
	return transfer, compute, requests
}

// dailyMicros is what the cache costs in a day, exactly: a day's share of a month's storage (24 of
// 730 hours) and a day of refreshes. A figure that did not fit counts as nothing known: nil.
func dailyMicros(c *datav1alpha1.CacheCost) *big.Rat {
	if c.StorageMicrosPerMonth == nil || (c.RefreshMicrosPerDay == nil && c.SyncIntervalSeconds > 0) {
		return nil
	}
	day := new(big.Rat).Mul(new(big.Rat).SetInt64(*c.StorageMicrosPerMonth), big.NewRat(24, hoursPerMonth))
	if c.RefreshMicrosPerDay != nil {
		day.Add(day, new(big.Rat).SetInt64(*c.RefreshMicrosPerDay))
	}
	return day
}

// breakEvenAtRate is when a cache that cost fill micros to fill, and daily micros a day to keep, has
// paid for itself at runsPerDay runs that each save saving micros: after fill / (runsPerDay × saving −
// daily) days, which is that × runsPerDay runs; both rounded up, at least 1. nil when a day's runs do
// not save what a day of the cache costs, or a figure does not fit.
func breakEvenAtRate(fill, daily *big.Rat, saving int64, runsPerDay int32) (runs, days *int64) {
	if daily == nil || saving <= 0 || runsPerDay <= 0 {
		return nil, nil
	}
	net := new(big.Rat).Mul(big.NewRat(saving, 1), big.NewRat(int64(runsPerDay), 1))
	net.Sub(net, daily)
	if net.Sign() <= 0 {
		return nil, nil
	}
	d := new(big.Rat).Quo(fill, net)
	runs = ceilAtLeast1(new(big.Rat).Mul(d, big.NewRat(int64(runsPerDay), 1)))
	days = ceilAtLeast1(d)
	if runs == nil || days == nil {
		return nil, nil
	}
	return runs, days
}

// ceilAtLeast1 rounds a non-negative amount up, to at least 1; nil when it does not fit in an int64.
func ceilAtLeast1(v *big.Rat) *int64 {
	q, rem := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return nil
	}
	return ptr.To(max(1, q.Int64()))
}

// roundOr0 is roundMicros for a count that must be present: 0 when it does not fit.
func roundOr0(v *big.Rat) *int64 {
	if n := roundMicros(v); n != nil {
		return n
	}
	return ptr.To(int64(0))
}

// price parses a validated decimal price; "" (or, never admitted by the API, garbage) is 0.
func price(s string) *big.Rat {
	v, ok := new(big.Rat).SetString(s)
	if !ok || s == "" {
		return new(big.Rat)
	}
	return v
}
