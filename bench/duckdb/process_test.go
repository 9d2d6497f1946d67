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

package duckdb

import (
	"os"
	"runtime"
	"testing"
)

func TestSettingValuesAreQuotedUnlessNumbersOrBooleans(t *testing.T) {
	for in, want := range map[string]string{"4": "4", "0.5": "0.5", "true": "true", "false": "false", "1GB": "'1GB'", "it's": "'it''s'"} {
		if got := settingValue(in); got != want {
			t.Errorf("settingValue(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestProcessConfig(t *testing.T) {
	cfg, err := ProcessConfig(0, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(cfg.TempDir)
	if cfg.Threads != runtime.GOMAXPROCS(0) || cfg.MemoryLimit != 64<<20 {
		t.Errorf("config %+v: want GOMAXPROCS threads and the limit given", cfg)
	}
	if st, err := os.Stat(cfg.TempDir); err != nil || !st.IsDir() {
		t.Errorf("spill directory %s: %v", cfg.TempDir, err)
	}
}

func TestFindExtensionNamesAMissingFlag(t *testing.T) {
	if _, err := FindExtension("tpch", "/nonexistent/tpch.duckdb_extension", EnvTPCH); err == nil || err.Error() != "--tpch-extension /nonexistent/tpch.duckdb_extension: not found" {
		t.Errorf("got %v", err)
	}
}
