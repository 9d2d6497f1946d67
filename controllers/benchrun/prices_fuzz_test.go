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
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParsePriceFile feeds the prices file parser (the chart's ConfigMap, which an operator edits):
// it never panics, and a file it accepts has a currency code, every price a non-negative decimal, a
// default storage class, and reads back the same after being written again.
func FuzzParsePriceFile(f *testing.F) {
	builtin, err := yaml.Marshal(BuiltinPrices())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(builtin)
	f.Add([]byte("currency: USD\ncoreSecond: \"1\"\n"))
	f.Add([]byte("currency: usd\nstorageClasses: {default: \"-1\"}\n"))
	f.Add([]byte("{unknown: 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePriceFile(data)
		if err != nil {
			return
		}
		if !currencyCode.MatchString(p.Currency) {
			t.Fatalf("accepted currency %q", p.Currency)
		}
		for _, v := range []string{p.CoreSecond, p.GiBSecond, p.TransferGB, p.PlacementMultiplier, p.GetPer1000, p.ListPer1000} {
			if !decimalPrice.MatchString(v) {
				t.Fatalf("accepted price %q", v)
			}
		}
		if _, ok := p.StorageClasses[storageClassDefault]; !ok {
			t.Fatal("accepted a file without a default storage class")
		}
		again, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePriceFile(again)
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("written again, the file reads back as %+v, %v; was %+v", back, err, p)
		}
	})
}
