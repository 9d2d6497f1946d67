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

package s3store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestUploadsOf(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"a.parquet", "t/b=1/part.parquet"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "a.parquet")
	for _, tc := range []struct {
		src, key string
		want     []Upload
	}{
		{dir, "data", []Upload{{file, "data/a.parquet"}, {filepath.Join(dir, "t", "b=1", "part.parquet"), "data/t/b=1/part.parquet"}}},
		{file, "x/y.parquet", []Upload{{file, "x/y.parquet"}}},
		{file, "x/", []Upload{{file, "x/a.parquet"}}},
		{file, "", []Upload{{file, "a.parquet"}}},
	} {
		got, err := UploadsOf(tc.src, tc.key)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("UploadsOf(%s, %q) = %v, %v; want %v", tc.src, tc.key, got, err, tc.want)
		}
	}
}
