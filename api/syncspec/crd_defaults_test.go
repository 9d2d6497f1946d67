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

package syncspec

import (
	"os"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/pqcache/pqcache/api/wire"
)

// TestTheCRDDefaultsAreTheSyncDefaults: the API server fills spec.sync's defaults from the CRD's
// markers, and Args fills them from Go constants for objects that never went through it (built by
// hand, or stored before a field existed). The two must agree, or a Dataset syncs one way when
// created with kubectl and another when it was not.
func TestTheCRDDefaultsAreTheSyncDefaults(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/data.pqcache.dev_datasets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	sync := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["sync"].Properties
	for field, want := range map[string]string{
		"prune":           strconv.FormatBool(DefaultPrune),
		"keepGenerations": strconv.Itoa(wire.DefaultGenerations),
		"verify":          strconv.Quote(string(wire.DefaultVerify)),
		"timeout":         strconv.Quote(strings.TrimSuffix(DefaultTimeout.String(), "0m0s")),
	} {
		d := sync[field].Default
		if d == nil {
			t.Errorf("spec.sync.%s has no default in the CRD; Go's is %s", field, want)
			continue
		}
		// The API spells the verify mode Checksum, the worker's flag checksum (syncspec.Args maps the
		// others; the default is the flag's).
		if got := string(d.Raw); !strings.EqualFold(got, want) {
			t.Errorf("spec.sync.%s defaults to %s in the CRD and to %s in Go", field, got, want)
		}
	}
}
