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

// Package health computes what the GitOps tools make of pqcache's objects, for tests: Argo CD's health
// (the Lua scripts pqcache ships in config/argocd, run as Argo CD runs them) and Flux's (kstatus).
package health

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository's root, found from this file's place in it.
func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Argo runs an Argo CD health script, as it stands in config/argocd/argocd-cm-patch.yaml (what
// users merge into argocd-cm), on obj, the way Argo CD does: obj as a global table, a table returned.
func Argo(t testing.TB, key string, obj runtime.Object) (string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "config", "argocd", "argocd-cm-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	script, ok := cm.Data["resource.customizations.health.data.pqcache.dev_"+key]
	if !ok {
		t.Fatalf("no health check for %s", key)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, m))
	if err := L.DoString(script); err != nil {
		t.Fatalf("running the %s health script: %v", key, err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the %s health script returned %v", key, L.Get(-1))
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, x := range v {
			t.RawSetString(k, toLua(L, x))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, x := range v {
			t.Append(toLua(L, x))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic("unexpected type")
}

// Kstatus is the status kstatus (which Flux reads) computes for obj.
func Kstatus(t testing.TB, obj runtime.Object) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}
