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

package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/pqcache/pqcache/api/runresults"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// readResults reads one file given to `pqcache report`: a bench result (JSON), or a BenchRun or a List
// of them (YAML or JSON, as kubectl prints them), whose status results become bench results.
func readResults(data []byte) ([]*wire.BenchResult, error) {
	doc, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
	}
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("not a bench result or a BenchRun: %w", err)
	}
	switch head.Kind {
	case "":
		var r wire.BenchResult
		if err := json.Unmarshal(doc, &r); err != nil || r.Queries == nil {
			return nil, errors.Join(errors.New("not a bench result (pqcache bench --json) or a BenchRun"), err)
		}
		return []*wire.BenchResult{&r}, nil
	case "BenchRun":
		var br datav1alpha1.BenchRun
		if err := json.Unmarshal(doc, &br); err != nil {
			return nil, err
		}
		return benchRunResults(&br)
	case "List", "BenchRunList":
		var out []*wire.BenchResult
		for _, item := range head.Items {
			rs, err := readResults(item)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s is neither a bench result nor a BenchRun", head.Kind)
}

// benchRunResults is a BenchRun's recorded results, or an error while it has none.
func benchRunResults(br *datav1alpha1.BenchRun) ([]*wire.BenchResult, error) {
	out := runresults.Wire(br)
	if len(out) == 0 {
		return nil, fmt.Errorf("BenchRun %s has no results yet (progress %q)", br.Name, br.Status.Progress)
	}
	return out, nil
}
