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
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// PriceFile is the operator's prices: the unit prices a BenchRun's spec.pricing leaves out, and a
// price per GB-month for each StorageClass. It is YAML (docs/benchruns.md gives the format and the
// AWS pages behind the shipped values); the chart renders it from values.yaml `prices:` into a
// ConfigMap mounted into the manager.
type PriceFile struct {
	Currency            string `json:"currency"`
	CoreSecond          string `json:"coreSecond"`
	GiBSecond           string `json:"gibSecond"`
	TransferGB          string `json:"transferGB"`
	PlacementMultiplier string `json:"placementMultiplier"`
	GetPer1000          string `json:"getPer1000"`
	ListPer1000         string `json:"listPer1000"`
	// StorageClasses prices a GB-month per StorageClass name; "default" prices a claim of a class not
	// listed (or none), "node-disk" the per-node copies of spec.replicas.
	StorageClasses map[string]string `json:"storageClasses"`
}

// BuiltinPrices are the prices used without a prices file: the same AWS us-east-1 list prices the
// chart ships (and, for coreSecond to currency, the defaults the CRD filled in before the prices file
// existed, so runs are priced as they were).
func BuiltinPrices() PriceFile {
	return PriceFile{
		Currency: "USD", CoreSecond: "0.0000112444", GiBSecond: "0.0000012347", TransferGB: "0.09",
		PlacementMultiplier: "1", GetPer1000: "0.0004", ListPer1000: "0.005",
		StorageClasses: map[string]string{storageClassDefault: "0.08", storageClassNodeDisk: "0.08", "gp3": "0.08", "gp2": "0.10",
			"io1": "0.125", "io2": "0.125", "st1": "0.045", "sc1": "0.015"},
	}
}

var (
	decimalPrice = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ParsePriceFile reads a prices file strictly: unknown keys, prices that are not non-negative decimal
// numbers, and a missing one are errors, so a typo does not silently price at zero.
func ParsePriceFile(data []byte) (PriceFile, error) {
	var f PriceFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return PriceFile{}, fmt.Errorf("parsing prices: %w", err)
	}
	if !currencyCode.MatchString(f.Currency) {
		return PriceFile{}, fmt.Errorf("prices: currency %q is not an ISO 4217 code such as USD", f.Currency)
	}
	fields := map[string]string{"coreSecond": f.CoreSecond, "gibSecond": f.GiBSecond, "transferGB": f.TransferGB,
		"placementMultiplier": f.PlacementMultiplier, "getPer1000": f.GetPer1000, "listPer1000": f.ListPer1000}
	for class, p := range f.StorageClasses {
		fields["storageClasses."+class] = p
	}
	for name, p := range fields {
		if !decimalPrice.MatchString(p) {
			return PriceFile{}, fmt.Errorf("prices: %s is %q, not a non-negative decimal number such as 0.08", name, p)
		}
	}
	if _, ok := f.StorageClasses[storageClassDefault]; !ok {
		return PriceFile{}, errors.New("prices: storageClasses has no \"default\" price")
	}
	return f, nil
}

// Prices reads the prices file and reads it again when it changes (a ConfigMap's mounted files are
// replaced when it is edited), so new prices apply without a restart. Without a path it gives
// BuiltinPrices. Safe for concurrent use.
type Prices struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	current PriceFile
}

// NewPrices checks the file at path now (a manager with a broken prices file should not start) and
// returns a reader of it; "" gives the built-in prices.
func NewPrices(path string) (*Prices, error) {
	p := &Prices{path: path, current: BuiltinPrices()}
	if _, err := p.Get(); err != nil {
		return nil, err
	}
	return p, nil
}

// Get returns the current prices. When the file changed into something that does not parse, it
// returns the last good prices with the error, for the caller to report.
func (p *Prices) Get() (PriceFile, error) {
	if p == nil || p.path == "" {
		return BuiltinPrices(), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	info, err := os.Stat(p.path)
	if err != nil {
		return p.current, fmt.Errorf("reading prices: %w", err)
	}
	if info.ModTime().Equal(p.modTime) {
		return p.current, nil
	}
	data, err := os.ReadFile(p.path)
	if err != nil {
		return p.current, fmt.Errorf("reading prices: %w", err)
	}
	f, err := ParsePriceFile(data)
	if err != nil {
		return p.current, fmt.Errorf("%s: %w", p.path, err)
	}
	p.current, p.modTime = f, info.ModTime()
	return f, nil
}

// effectivePricing is the prices a run uses: each price its spec gives, else the file's; the storage
// price is the file's for class unless the spec sets one. nil spec: the run is not priced.
func effectivePricing(f PriceFile, spec *datav1alpha1.Pricing, class string) *datav1alpha1.Pricing {
	if spec == nil {
		return nil
	}
	out := *spec
	or := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	or(&out.Currency, f.Currency)
	or(&out.CoreSecond, f.CoreSecond)
	or(&out.GiBSecond, f.GiBSecond)
	or(&out.TransferGB, f.TransferGB)
	or(&out.PlacementMultiplier, f.PlacementMultiplier)
	or(&out.GetPer1000, f.GetPer1000)
	or(&out.ListPer1000, f.ListPer1000)
	storage, ok := f.StorageClasses[class]
	if !ok {
		storage = f.StorageClasses[storageClassDefault]
	}
	or(&out.StorageGBMonth, storage)
	return &out
}
