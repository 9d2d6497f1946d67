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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// costPrices are round prices whose products are easy to check by hand.
var costPrices = &datav1alpha1.Pricing{CoreSecond: "0.00001", GiBSecond: "0.000001", TransferGB: "0.09",
	GetPer1000: "0.0004", ListPer1000: "0.005", StorageGBMonth: "0.08"}

// costDataset is a synced Dataset of 50 GB whose last sync copied 1 GB in 60 s with 100 GETs and 10
// LISTs.
func costDataset(schedule string) *datav1alpha1.Dataset {
	ds := &datav1alpha1.Dataset{}
	ds.Spec.Refresh.Schedule = schedule
	ds.Status.Manifest = &datav1alpha1.ManifestSummary{Bytes: 50_000_000_000}
	ds.Status.LastSync = &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, BytesCopied: 1_000_000_000,
		DurationMillis: 60_000, GetRequests: 100, ListRequests: 10}
	return ds
}

var costWorker = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}

func TestCacheCost(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	unchanged := func(*datav1alpha1.Dataset) {}
	tests := []struct {
		name     string
		schedule string
		class    string
		edit     func(*datav1alpha1.Dataset)
		want     datav1alpha1.CacheCost
	}{{
		// 50 GB × $0.08 = $4 a month. 24 syncs a day, each 1 GB × $0.09 = $2.16; 60 s × (0.5 core ×
		// 0.00001 + 1 GiB × 0.000001) × 24 = $0.00864; (100 × 0.0004 + 10 × 0.005) / 1000 × 24 = $0.00216.
		name: "hourly on a gp3 claim", schedule: "0 * * * *", class: "gp3", edit: unchanged,
		want: datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000),
			SyncIntervalSeconds: 3600, RefreshBytesPerDay: 24_000_000_000, TransferMicrosPerDay: i(2_160_000),
			ComputeMicrosPerDay: i(8_640), RequestMicrosPerDay: i(2_160), RefreshMicrosPerDay: i(2_170_800)},
	}, {
		// 112 syncs a week: 16 a day.
		name: "@every 90m, the cluster's default class", schedule: "@every 90m", edit: unchanged,
		want: datav1alpha1.CacheCost{StorageClass: "default", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000),
			SyncIntervalSeconds: 5400, RefreshBytesPerDay: 16_000_000_000, TransferMicrosPerDay: i(1_440_000),
			ComputeMicrosPerDay: i(5_760), RequestMicrosPerDay: i(1_440), RefreshMicrosPerDay: i(1_447_200)},
	}, {
		// 12 syncs in 52 weeks: 1 GB × $0.09 × 12/364 a day = $0.0029670...
		name: "monthly", schedule: "0 0 1 * *", class: "gp3", edit: unchanged,
		want: datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000),
			SyncIntervalSeconds: 2_620_800, RefreshBytesPerDay: 32_967_033, TransferMicrosPerDay: i(2_967),
			ComputeMicrosPerDay: i(12), RequestMicrosPerDay: i(3), RefreshMicrosPerDay: i(2_982)},
	}, {
		name: "no schedule: refreshes cost nothing", class: "gp3", edit: unchanged,
		want: datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000),
			TransferMicrosPerDay: i(0), ComputeMicrosPerDay: i(0), RequestMicrosPerDay: i(0), RefreshMicrosPerDay: i(0)},
	}, {
		name: "suspended: refreshes cost nothing", schedule: "0 * * * *", class: "gp3",
		edit: func(ds *datav1alpha1.Dataset) { ds.Spec.Refresh.Suspend = true },
		want: datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000),
			TransferMicrosPerDay: i(0), ComputeMicrosPerDay: i(0), RequestMicrosPerDay: i(0), RefreshMicrosPerDay: i(0)},
	}, {
		name: "the last sync failed: refreshes unknown", schedule: "0 * * * *", class: "gp3",
		edit: func(ds *datav1alpha1.Dataset) { ds.Status.LastSync.Result = datav1alpha1.SyncFailed },
		want: datav1alpha1.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: i(4_000_000), SyncIntervalSeconds: 3600},
	}, {
		// Three node copies of 50 GB on node disks: 150 GB × $0.08 = $12.
		name: "per-node copies", schedule: "0 * * * *", class: "gp3",
		edit: func(ds *datav1alpha1.Dataset) {
			ds.Spec.Replicas = &datav1alpha1.ReplicaPolicy{}
			ds.Status.Replicas = &datav1alpha1.ReplicasStatus{Desired: 3}
			ds.Status.LastSync = nil
		},
		want: datav1alpha1.CacheCost{StorageClass: "node-disk", Copies: 3, StorageBytes: 150_000_000_000, StorageMicrosPerMonth: i(12_000_000), SyncIntervalSeconds: 3600},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := costDataset(tt.schedule)
			tt.edit(ds)
			got := cacheCost(costPrices, cacheFactsOf(ds, tt.class, costWorker))
			if d := cmp.Diff(&tt.want, got); d != "" {
				t.Errorf("cache cost (-want +got):\n%s", d)
			}
		})
	}
}

func TestBreakEvenAtRate(t *testing.T) {
	fill := big.NewRat(1_000_000, 1) // 50 GB at $0.02
	tests := []struct {
		name       string
		daily      *big.Rat
		saving     int64
		runsPerDay int32
		runs, days *int64
	}{
		{name: "no daily cost: fill / (10 × 10,000) = 10 days, 100 runs", daily: new(big.Rat), saving: 10_000, runsPerDay: 10, runs: ptr.To[int64](100), days: ptr.To[int64](10)},
		{name: "half of each day's saving pays the cache: twice as long", daily: big.NewRat(50_000, 1), saving: 10_000, runsPerDay: 10, runs: ptr.To[int64](200), days: ptr.To[int64](20)},
		{name: "a day's runs save what a day costs: never", daily: big.NewRat(50_000, 1), saving: 10_000, runsPerDay: 5},
		{name: "within the first day: 1 day, and the runs it takes", daily: new(big.Rat), saving: 10_000, runsPerDay: 1000, runs: ptr.To[int64](100), days: ptr.To[int64](1)},
		{name: "rounded up: 1,000,000 / (3 × 70,000) = 4.76 days, 14.3 runs", daily: new(big.Rat), saving: 70_000, runsPerDay: 3, runs: ptr.To[int64](15), days: ptr.To[int64](5)},
		{name: "the volume costs more: never", daily: new(big.Rat), saving: -5, runsPerDay: 10},
		{name: "no rate", daily: new(big.Rat), saving: 10_000, runsPerDay: 0},
		{name: "daily cost unknown", saving: 10_000, runsPerDay: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, days := breakEvenAtRate(fill, tt.daily, tt.saving, tt.runsPerDay)
			if d := cmp.Diff([]*int64{tt.runs, tt.days}, []*int64{runs, days}); d != "" {
				t.Errorf("runs, days (-want +got):\n%s", d)
			}
		})
	}
}

func TestDailyMicros(t *testing.T) {
	// A month is 730 hours: $0.73 a month is $0.024 a day.
	c := &datav1alpha1.CacheCost{StorageMicrosPerMonth: ptr.To[int64](730_000), RefreshMicrosPerDay: ptr.To[int64](1_000), SyncIntervalSeconds: 3600}
	if got := dailyMicros(c); got.Cmp(big.NewRat(25_000, 1)) != 0 {
		t.Errorf("daily %s micros, want 25000", got.RatString())
	}
	c.RefreshMicrosPerDay = nil // scheduled, but no sync known: the cost of a day is unknown
	if got := dailyMicros(c); got != nil {
		t.Errorf("daily %s micros with the refreshes unknown, want nil", got.RatString())
	}
	c.SyncIntervalSeconds = 0 // no schedule: storage only
	if got := dailyMicros(c); got.Cmp(big.NewRat(24_000, 1)) != 0 {
		t.Errorf("daily %s micros, want 24000", got.RatString())
	}
}

// setCacheCosts gives the cache's costs to the results that read it, and the break-even in days only
// with spec.runsPerDay.
func TestSetCacheCosts(t *testing.T) {
	done := &metav1.Time{Time: time.Unix(1, 0)}
	run := func(runsPerDay *int32) *datav1alpha1.BenchRun {
		r := &datav1alpha1.BenchRun{Spec: datav1alpha1.BenchRunSpec{RunsPerDay: runsPerDay}}
		r.Status.Pricing = &datav1alpha1.Pricing{TransferGB: "0.02", StorageGBMonth: "0.073"}
		r.Status.Results = []datav1alpha1.BenchResult{
			{Config: "a", Input: "s3", CostMicros: ptr.To[int64](12_000), CompletionTime: done},
			{Config: "a", Input: "volume", CostMicros: ptr.To[int64](2_000), CompletionTime: done, BreakEvenRuns: ptr.To[int64](100)},
			{Config: "a", Input: "mixed-staged", CostMicros: ptr.To[int64](3_000), CompletionTime: done},
			{Config: "b", Input: "volume"}, // still running
		}
		return r
	}
	// 50 GB: filling costs 1,000,000 micros, storing 3,650,000 a month = 120,000 a day; no refreshes.
	facts := &cacheFacts{class: "gp3", copies: 1, bytes: 50_000_000_000}

	r := run(nil)
	setCacheCosts(r, facts)
	if r.Status.Results[0].Cache != nil || r.Status.Results[3].Cache != nil {
		t.Errorf("cache costs on an s3 or unfinished result: %+v", r.Status.Results)
	}
	for _, i := range []int{1, 2} {
		if c := r.Status.Results[i].Cache; c == nil || *c.StorageMicrosPerMonth != 3_650_000 {
			t.Errorf("%s: cache %+v, want $3.65 a month", r.Status.Results[i].Input, c)
		}
	}
	if got := r.Status.Results[1]; *got.BreakEvenRuns != 100 || got.BreakEvenDays != nil || r.Status.BreakEvenDays != nil {
		t.Errorf("without runsPerDay: break-even %d runs, %v days; want 100 runs, no days", *got.BreakEvenRuns, got.BreakEvenDays)
	}

	// 20 runs a day save 200,000 micros against 120,000 of storage: 1,000,000 / 80,000 = 12.5 days.
	r = run(ptr.To[int32](20))
	setCacheCosts(r, facts)
	got := r.Status.Results[1]
	if d := cmp.Diff([]*int64{ptr.To[int64](250), ptr.To[int64](13)}, []*int64{got.BreakEvenRuns, got.BreakEvenDays}); d != "" {
		t.Errorf("at 20 runs a day, volume's break-even runs, days (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]*int64{ptr.To[int64](250), ptr.To[int64](13)}, []*int64{r.Status.BreakEvenRuns, r.Status.BreakEvenDays}); d != "" {
		t.Errorf("the run's break-even runs, days (-want +got):\n%s", d)
	}
	// 12 runs a day save exactly what the storage costs: never.
	r = run(ptr.To[int32](12))
	setCacheCosts(r, facts)
	if got := r.Status.Results[1]; got.BreakEvenRuns != nil || got.BreakEvenDays != nil {
		t.Errorf("at 12 runs a day: break-even %v runs, %v days; want never", got.BreakEvenRuns, got.BreakEvenDays)
	}
	// The Dataset gone: what was computed stays.
	before := r.Status.DeepCopy()
	setCacheCosts(r, nil)
	if d := cmp.Diff(before, &r.Status); d != "" {
		t.Errorf("without the Dataset the status changed:\n%s", d)
	}
}

func TestParsePriceFile(t *testing.T) {
	good := "currency: EUR\ncoreSecond: \"0.00001\"\ngibSecond: \"0.000001\"\ntransferGB: \"0\"\nplacementMultiplier: \"1\"\n" +
		"getPer1000: \"0.0004\"\nlistPer1000: \"0.005\"\nstorageClasses:\n  default: \"0.1\"\n  fast: \"0.2\"\n"
	f, err := ParsePriceFile([]byte(good))
	if err != nil || f.Currency != "EUR" || f.StorageClasses["fast"] != "0.2" {
		t.Fatalf("ParsePriceFile: %+v, %v", f, err)
	}
	for name, bad := range map[string]string{
		"an unknown key":         good + "storageGBMonth: \"0.1\"\n",
		"a price in exponent":    strings.Replace(good, `transferGB: "0"`, "transferGB: 1e-5", 1),
		"a negative price":       strings.Replace(good, `"0.2"`, `"-0.2"`, 1),
		"no default storage":     strings.Replace(good, `default: "0.1"`, `other: "0.1"`, 1),
		"a missing price":        strings.Replace(good, "listPer1000: \"0.005\"\n", "", 1),
		"a currency not ISO4217": strings.Replace(good, "EUR", "euro", 1),
	} {
		if _, err := ParsePriceFile([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// The prices file is read again when it changes; a broken replacement keeps the last good prices
// and says why.
func TestPricesReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.yaml")
	write := func(transfer string, at time.Time) {
		t.Helper()
		body := "currency: USD\ncoreSecond: \"0\"\ngibSecond: \"0\"\ntransferGB: \"" + transfer + "\"\nplacementMultiplier: \"1\"\n" +
			"getPer1000: \"0\"\nlistPer1000: \"0\"\nstorageClasses: {default: \"0.08\"}\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("0.01", time.Unix(1000, 0))
	p, err := NewPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := p.Get(); err != nil || f.TransferGB != "0.01" {
		t.Fatalf("first read: %+v, %v", f, err)
	}
	write("0.02", time.Unix(2000, 0))
	if f, err := p.Get(); err != nil || f.TransferGB != "0.02" {
		t.Fatalf("after a change: %+v, %v", f, err)
	}
	write("x", time.Unix(3000, 0))
	if f, err := p.Get(); err == nil || f.TransferGB != "0.02" {
		t.Fatalf("after a broken change: %+v, %v; want the last good prices and an error", f, err)
	}
	if _, err := NewPrices(path); err == nil {
		t.Error("NewPrices accepted a broken file")
	}
	if f, err := (*Prices)(nil).Get(); err != nil || f.TransferGB != BuiltinPrices().TransferGB {
		t.Errorf("no prices file: %+v, %v; want the built-in prices", f, err)
	}
}

func TestEffectivePricing(t *testing.T) {
	f := BuiltinPrices()
	if effectivePricing(f, nil, "gp3") != nil {
		t.Error("a run without pricing was priced")
	}
	got := effectivePricing(f, &datav1alpha1.Pricing{TransferGB: "0"}, "gp2")
	want := &datav1alpha1.Pricing{Currency: "USD", CoreSecond: "0.0000112444", GiBSecond: "0.0000012347", TransferGB: "0",
		PlacementMultiplier: "1", GetPer1000: "0.0004", ListPer1000: "0.005", StorageGBMonth: "0.10"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spec over file (-want +got):\n%s", d)
	}
	// A class the file does not list is priced as "default"; the spec's storage price wins over both.
	if got := effectivePricing(f, &datav1alpha1.Pricing{}, "local-path"); got.StorageGBMonth != "0.08" {
		t.Errorf("unlisted class priced %s, want the default 0.08", got.StorageGBMonth)
	}
	if got := effectivePricing(f, &datav1alpha1.Pricing{StorageGBMonth: "0.5"}, "gp2"); got.StorageGBMonth != "0.5" {
		t.Errorf("spec storage price %s, want 0.5", got.StorageGBMonth)
	}
	// An object created while the CRD filled in the old defaults keeps them: they equal the file's.
	old := &datav1alpha1.Pricing{CoreSecond: "0.0000112444", GiBSecond: "0.0000012347", TransferGB: "0.09", PlacementMultiplier: "1", Currency: "USD"}
	if got := effectivePricing(f, old, "gp3"); got.CoreSecond != old.CoreSecond || got.GetPer1000 != "0.0004" {
		t.Errorf("old object's pricing: %+v", got)
	}
}
