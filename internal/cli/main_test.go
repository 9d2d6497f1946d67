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
	"os"
	"testing"
)

// TestMain lets this test binary stand in for pqcache when bench re-executes "itself" for a query,
// and when a test runs it as a whole pqcache process (PQCACHE_TEST_AS_PQCACHE=1).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "bench-query" || os.Getenv(envAsPqcache) == "1") {
		cmd := NewRootCommand()
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// envAsPqcache makes this test binary run as pqcache with its arguments.
const envAsPqcache = "PQCACHE_TEST_AS_PQCACHE"
