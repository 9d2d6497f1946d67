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
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// planned is a run's Jobs.
func planned(run *datav1alpha1.BenchRun) []benchJob { return plannedJobs(run) }

func TestBenchJobNamesDoNotCollideAcrossRuns(t *testing.T) {
	run := func(name, uid, config string) *datav1alpha1.BenchRun {
		return &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Spec: datav1alpha1.BenchRunSpec{
			Configs: []datav1alpha1.ResourceConfig{{Name: config}}, Inputs: []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}},
		}}
	}
	// "x-a" with config "b" and "x" with config "a-b" used to share the Job x-a-b-0.
	j1, j2 := planned(run("x-a", "u1", "b"))[0].name, planned(run("x", "u2", "a-b"))[0].name
	if j1 == j2 {
		t.Fatalf("two runs share the Job name %s", j1)
	}
	// The same run asks for the same name every time (a reconcile must find the Job it created).
	if planned(run("x-a", "u1", "b"))[0].name != j1 {
		t.Fatal("a run's Job names are not stable")
	}
	if !regexp.MustCompile(`^x-a-b-[0-9a-f]{8}$`).MatchString(j1) {
		t.Errorf("job name %q does not read as run-config-hash", j1)
	}
}

// Bench Job names are label values and DNS names for every run name the API admits (up to 253
// characters) and every config name (up to 32).
func TestBenchJobNamesAreValidForEveryNameTheAPIAdmits(t *testing.T) {
	longest := strings.Repeat("long-name.", 25) + "end"
	for _, name := range []string{"a", "tpch", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("x-", 40) + "y", longest} {
		run := &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-2"}, Spec: datav1alpha1.BenchRunSpec{
			Configs: []datav1alpha1.ResourceConfig{{Name: strings.Repeat("c", 32)}},
			Inputs:  []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}, {Type: datav1alpha1.InputMixedStaged}},
		}}
		for _, j := range planned(run) {
			if errs := validation.IsValidLabelValue(j.name); len(errs) > 0 || validation.IsDNS1123Subdomain(j.name) != nil {
				t.Errorf("bench job name %q for a %d-character run is invalid: %v", j.name, len(name), errs)
			}
		}
	}
}
