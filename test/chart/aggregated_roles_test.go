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
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAggregatedRoles: the chart adds pqcache's resources to the cluster's own view, edit and admin
// roles by aggregation labels. view (and so edit and admin, which include it) reads every pqcache
// resource; edit and admin also write Datasets and BenchRuns; nobody but pqcache writes
// DatasetReplicas or any status. Cluster-wide and namespaced installs alike.
func TestAggregatedRoles(t *testing.T) {
	for _, sets := range [][]string{nil, {"watchNamespaces={team-a}"}} {
		r := render(t, sets...)
		view := r.named(t, "ClusterRole", "pqcache-view")
		edit := r.named(t, "ClusterRole", "pqcache-edit")
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   []string
		}{
			{"pqcache-view", view.GetLabels(), []string{"view", "edit", "admin"}},
			{"pqcache-edit", edit.GetLabels(), []string{"edit", "admin"}},
		} {
			for _, role := range []string{"view", "edit", "admin"} {
				key := "rbac.authorization.k8s.io/aggregate-to-" + role
				wanted := false
				for _, w := range tc.want {
					wanted = wanted || w == role
				}
				if got := tc.labels[key] == "true"; got != wanted {
					t.Errorf("%v: %s has %s=%q, want aggregated into %v", sets, tc.name, key, tc.labels[key], tc.want)
				}
			}
		}
		wantView := []any{map[string]any{
			"apiGroups": []any{"data.pqcache.dev"},
			"resources": []any{"datasets", "datasets/status", "benchruns", "benchruns/status", "datasetreplicas", "datasetreplicas/status"},
			"verbs":     []any{"get", "list", "watch"},
		}}
		if !reflect.DeepEqual(view.Object["rules"], wantView) {
			t.Errorf("%v: pqcache-view rules %v, want %v", sets, view.Object["rules"], wantView)
		}
		wantEdit := []any{map[string]any{
			"apiGroups": []any{"data.pqcache.dev"},
			"resources": []any{"datasets", "benchruns"},
			"verbs":     []any{"create", "update", "patch", "delete", "deletecollection"},
		}}
		if !reflect.DeepEqual(edit.Object["rules"], wantEdit) {
			t.Errorf("%v: pqcache-edit rules %v, want %v", sets, edit.Object["rules"], wantEdit)
		}
		// The roles are for users: the chart binds them to nobody.
		for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
			for _, b := range r.all(kind) {
				if name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name"); name == "pqcache-view" || name == "pqcache-edit" {
					t.Errorf("%v: %s %s binds %s", sets, kind, b.GetName(), name)
				}
			}
		}
	}
}
