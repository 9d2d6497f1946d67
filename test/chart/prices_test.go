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

package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pqcache/pqcache/controllers/benchrun"
)

const pricesArg = "--prices-file=/etc/pqcache/prices/prices.yaml"

// pricesVolume is the ConfigMap the manager's prices volume mounts, and whether the container mounts
// it where --prices-file reads.
func pricesVolume(t *testing.T, r rendered) (configMap string, mounted bool) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(r.one(t, "Deployment").Object, "spec", "template", "spec")
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range volumes {
		if v := v.(map[string]any); v["name"] == "prices" {
			configMap, _, _ = unstructured.NestedString(v, "configMap", "name")
		}
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	for _, m := range mounts {
		if m := m.(map[string]any); m["name"] == "prices" && m["mountPath"] == "/etc/pqcache/prices" {
			mounted = true
		}
	}
	return configMap, mounted
}

// The chart ships the prices as a ConfigMap rendered from values.yaml, the manager reads it as
// --prices-file, and the shipped values are the built-in prices a manager without the file uses.
func TestPricesConfigMapFromValues(t *testing.T) {
	r := render(t)
	if args := r.managerArgs(t); !hasArg(args, pricesArg) {
		t.Errorf("manager args %v lack %q", args, pricesArg)
	}
	if cm, mounted := pricesVolume(t, r); cm != "pq-pqcache-prices" || !mounted {
		t.Errorf("prices volume: ConfigMap %q, mounted %v; want pq-pqcache-prices, mounted", cm, mounted)
	}
	data, _, _ := unstructured.NestedString(r.named(t, "ConfigMap", "pq-pqcache-prices").Object, "data", "prices.yaml")
	got, err := benchrun.ParsePriceFile([]byte(data))
	if err != nil {
		t.Fatalf("the rendered prices.yaml does not parse: %v\n%s", err, data)
	}
	if d := cmp.Diff(benchrun.BuiltinPrices(), got); d != "" {
		t.Errorf("chart prices differ from the built-in ones (-builtin +chart):\n%s", d)
	}

	// Values change what is rendered, nothing else does.
	out, err := helm(t, "template", "pq", chartDir, "--namespace", "pqcache-system",
		"--set-string", "prices.transferGB=0,prices.currency=EUR,prices.storageClasses.fast-nvme=0.2", "--show-only", "templates/prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ = unstructured.NestedString(parseYAML(t, out).one(t, "ConfigMap").Object, "data", "prices.yaml")
	got, err = benchrun.ParsePriceFile([]byte(data))
	if err != nil {
		t.Fatalf("the rendered prices.yaml does not parse: %v\n%s", err, data)
	}
	if got.TransferGB != "0" || got.Currency != "EUR" || got.StorageClasses["fast-nvme"] != "0.2" || got.StorageClasses["gp3"] != "0.08" {
		t.Errorf("prices from values: %+v", got)
	}
}

// A ConfigMap of the user's replaces the chart's: none is rendered and the manager mounts theirs.
func TestPricesExistingConfigMap(t *testing.T) {
	r := render(t, "prices.existingConfigMap=my-prices")
	for _, cm := range r.all("ConfigMap") {
		if strings.HasSuffix(cm.GetName(), "-prices") {
			t.Errorf("rendered %s although prices.existingConfigMap is set", cm.GetName())
		}
	}
	if cm, mounted := pricesVolume(t, r); cm != "my-prices" || !mounted {
		t.Errorf("prices volume: ConfigMap %q, mounted %v; want my-prices, mounted", cm, mounted)
	}
	if args := r.managerArgs(t); !hasArg(args, pricesArg) {
		t.Errorf("manager args %v lack %q", args, pricesArg)
	}
}

// A price given as a number (helm --set turns 0 and 1 into one) is refused by the schema, not rendered into
// a file the manager would refuse at start.
func TestPricesSchemaRefusesNumbers(t *testing.T) {
	for _, set := range []string{"prices.transferGB=0", "prices.storageClasses.gp3=1", "prices.currency=usd"} {
		if _, err := helm(t, "template", "pq", chartDir, "--set", set); err == nil || !strings.Contains(err.Error(), "prices") {
			t.Errorf("--set %s: err %v, want a schema error naming prices", set, err)
		}
	}
}
