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

package plugin

import (
	"strings"
	"testing"
)

func TestObjectNameTakesNameAndTypeSlashName(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		kind resourceKind
		want string
		err  string
	}{
		{arg: "tpch", kind: datasetKind, want: "tpch"},
		{arg: "dataset/tpch", kind: datasetKind, want: "tpch"},
		{arg: "datasets/tpch", kind: datasetKind, want: "tpch"},
		{arg: "pqds/tpch", kind: datasetKind, want: "tpch"},
		{arg: "Dataset/tpch", kind: datasetKind, want: "tpch"},
		{arg: "datasets.data.pqcache.dev/tpch", kind: datasetKind, want: "tpch"},
		{arg: "benchrun/nightly", kind: benchRunKind, want: "nightly"},
		{arg: "pqbr/nightly", kind: benchRunKind, want: "nightly"},
		{arg: "benchrun/tpch", kind: datasetKind, err: "this command takes a dataset"},
		{arg: "pod/tpch", kind: datasetKind, err: "TYPE one of dataset, dataset.data.pqcache.dev"},
		{arg: "dataset/", kind: datasetKind, err: "give NAME or dataset/NAME"},
		{arg: "dataset/a/b", kind: datasetKind, err: "give NAME or dataset/NAME"},
	} {
		got, err := objectName(tc.arg, tc.kind)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.arg, err, tc.err)
		case got != tc.want:
			t.Errorf("%q: name %q, want %q", tc.arg, got, tc.want)
		}
	}
}
