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

package csi

import (
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzVolumeAttributes feeds parseRequest the attributes a pod's inline volume passes (dataset,
// generation, anything else) next to the pod namespace kubelet adds, and Volumes.path the volume ID
// kubelet chooses. Seeds are the attributes of the publish tests and a pod spec's usual ones.
//
// Properties: a request is for the pod's own namespace, names a Dataset, and asks for generation 0
// (current) only when no generation was given and for a positive one otherwise; or it is refused.
// A volume's record is a file directly in the records' directory, whatever the ID.
func FuzzVolumeAttributes(f *testing.F) {
	f.Add("team-a", "sales", "", "csi-4b1c0f8e9d2a7b3c", "extra", "1")
	f.Add("team-a", "sales", "2", "csi-0123", "", "")
	f.Add("team-a", "", "1", "../../etc/passwd", attributePodNamespace, "kube-system")
	f.Add("", "sales", "-1", "a/../b", AttributeDataset, "other")
	f.Add("default", "ds", "9223372036854775808", ".", "", "")
	f.Add("default", "ds", "+3", "..", "", "")
	f.Fuzz(func(t *testing.T, namespace, dataset, generation, volumeID, extraKey, extraValue string) {
		attrs := map[string]string{}
		if extraKey != "" {
			attrs[extraKey] = extraValue
		}
		// kubelet's podInfoOnMount keys and the pod's own attributes, as kubelet merges them.
		attrs[attributePodNamespace], attrs[AttributeDataset] = namespace, dataset
		if generation != "" {
			attrs[AttributeGeneration] = generation
		}
		r, err := parseRequest(attrs)
		if err == nil {
			checkRequest(t, r, namespace, dataset, generation)
		}
		dir := "/var/lib/kubelet/plugins/pqcache/volumes"
		p := (&Volumes{dir: dir}).path(volumeID)
		if filepath.Dir(p) != dir || filepath.Base(p) == ".json" && volumeID != "" {
			t.Fatalf("volume %q is recorded at %s, outside %s", volumeID, p, dir)
		}
	})
}

func checkRequest(t *testing.T, r request, namespace, dataset, generation string) {
	t.Helper()
	switch {
	case r.namespace != namespace || namespace == "":
		t.Fatalf("pod in namespace %q asked for %+v", namespace, r)
	case r.dataset != dataset || dataset == "":
		t.Fatalf("dataset %q read as %+v", dataset, r)
	case generation == "" && r.generation != 0:
		t.Fatalf("no generation asked, got %d", r.generation)
	case generation != "" && r.generation <= 0:
		t.Fatalf("generation %q read as %d", generation, r.generation)
	}
	if n, err := strconv.ParseInt(generation, 10, 64); generation != "" && (err != nil || n != r.generation) {
		t.Fatalf("generation %q read as %d", generation, r.generation)
	}
}
