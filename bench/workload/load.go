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

package workload

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Load is what bench's --workload names: a built-in workload by name, or a file of YAML or JSON: the workload
// itself, or the ConfigMap a BenchRun would read it from (its workload.yaml key, or its only key).
func Load(name string) (*Workload, error) {
	if slices.Contains(Builtins, name) {
		return Builtin(name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--workload %s: not a built-in workload (%s), nor a file: %w", name, strings.Join(Builtins, ", "), err)
	}
	if text, ok, err := configMapWorkload(data); err != nil {
		return nil, fmt.Errorf("--workload %s: %w", name, err)
	} else if ok {
		data = []byte(text)
	}
	w, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--workload %s: %w", name, err)
	}
	return w, nil
}

// configMapWorkload is the workload in a ConfigMap manifest; ok is false for anything else.
func configMapWorkload(data []byte) (string, bool, error) {
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	// Data that does not parse as a YAML object is not a ConfigMap, and that is all this asks: Parse
	// then reads it as a workload and says what is wrong with it.
	if isObject := yaml.Unmarshal(data, &cm) == nil; !isObject || cm.Kind != "ConfigMap" {
		return "", false, nil
	}
	if text, ok := cm.Data["workload.yaml"]; ok {
		return text, true, nil
	}
	if len(cm.Data) == 1 {
		for _, text := range cm.Data {
			return text, true, nil
		}
	}
	return "", false, fmt.Errorf("the ConfigMap has no key workload.yaml (keys: %s)", strings.Join(slices.Sorted(maps.Keys(cm.Data)), ", "))
}
