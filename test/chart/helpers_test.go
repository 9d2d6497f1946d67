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

// Package chart tests the Helm chart as users meet it: `helm lint` and `helm template` with the pinned
// Helm CLI (`make helm`) over a matrix of values, with assertions on the rendered objects, and the
// rendered RBAC applied to a real API server with the manager running under exactly that identity.
package chart

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const chartDir = "../../charts/pqcache"

// helmBinary is the pinned Helm CLI.
func helmBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PQCACHE_HELM")
	if p == "" {
		p = filepath.Join("..", "..", "bin", "helm")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("helm not found at %s: run `make helm` (it builds the pinned version from the Go module proxy)", p)
	}
	return p
}

// helm runs the Helm CLI and returns stdout, or the error with stderr.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helmBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errors.New(strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// rendered is the output of helm template, by kind and name.
type rendered []*unstructured.Unstructured

func render(t *testing.T, sets ...string) rendered {
	t.Helper()
	args := []string{"template", "pq", chartDir, "--namespace", "pqcache-system"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", sets, err)
	}
	return parseYAML(t, out)
}

func parseYAML(t *testing.T, data string) rendered {
	t.Helper()
	var objs rendered
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding rendered chart: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func (r rendered) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

func (r rendered) one(t *testing.T, kind string) *unstructured.Unstructured {
	t.Helper()
	all := r.all(kind)
	if len(all) != 1 {
		t.Fatalf("want one %s, got %d", kind, len(all))
	}
	return all[0]
}

// managerArgs returns the manager container's args.
func (r rendered) managerArgs(t *testing.T) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(r.one(t, "Deployment").Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func hasArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// argWithPrefix is the value of the first argument starting with prefix, or "".
func argWithPrefix(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

// syncWriter serialises writes from the manager's goroutines into a buffer.
type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// named is the one object of kind with that name.
func (r rendered) named(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.all(kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// rolesBoundTo names ("Kind/name") the Roles and ClusterRoles that the chart binds to the
// ServiceAccount account.
func (r rendered) rolesBoundTo(account string) map[string]bool {
	bound := map[string]bool{}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, b := range r.all(kind) {
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				m := s.(map[string]any)
				if m["kind"] == "ServiceAccount" && m["name"] == account {
					roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
					name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
					bound[roleKind+"/"+name] = true
				}
			}
		}
	}
	return bound
}
