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
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pqcache/pqcache/controllers/benchrun"
)

// TestSparkDriverRole: the ClusterRole the operator binds to each Spark run's driver names exactly the
// core resources Spark's Kubernetes scheduler uses (executor pods, their ConfigMap, claims looked up),
// never a wildcard or a verb that grants more; and the manager may bind it by name but holds none of
// its pod rights itself.
func TestSparkDriverRole(t *testing.T) {
	r := render(t)
	role := r.named(t, "ClusterRole", benchrun.SparkDriverRole)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	got := map[string][]string{}
	for _, rule := range rules {
		m := rule.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		if !slices.Equal(groups, []string{""}) {
			t.Errorf("rule %v: core resources only", m)
		}
		for _, v := range verbs {
			if v == "*" || v == "bind" || v == "escalate" || v == "impersonate" {
				t.Errorf("rule %v grants %q", m, v)
			}
		}
		for _, x := range res {
			got[x] = verbs
		}
	}
	manage := []string{"create", "get", "list", "watch", "delete", "deletecollection"}
	want := map[string][]string{"pods": manage, "configmaps": manage, "persistentvolumeclaims": {"get", "list", "watch"}}
	for res, verbs := range want {
		if !slices.Equal(got[res], verbs) {
			t.Errorf("%s: verbs %v, want %v", res, got[res], verbs)
		}
	}
	if len(got) != len(want) {
		t.Errorf("resources %v, want exactly %v", got, want)
	}

	mgr := r.named(t, "ClusterRole", "pq-pqcache-manager")
	rules, _, _ = unstructured.NestedSlice(mgr.Object, "rules")
	bindsIt := false
	for _, rule := range rules {
		m := rule.(map[string]any)
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		names, _, _ := unstructured.NestedStringSlice(m, "resourceNames")
		if slices.Contains(res, "pods") && slices.ContainsFunc(verbs, func(v string) bool { return v == "create" || v == "delete" || v == "*" }) {
			t.Errorf("the manager may %v pods: it binds the driver's role instead of holding its rights", verbs)
		}
		if slices.Contains(res, "clusterroles") && slices.Contains(verbs, "bind") && slices.Contains(names, benchrun.SparkDriverRole) {
			bindsIt = true
		}
	}
	if !bindsIt {
		t.Errorf("the manager may not bind %s by name", benchrun.SparkDriverRole)
	}
}
