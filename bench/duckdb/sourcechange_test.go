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
	"errors"
	"fmt"
	"testing"
)

// TestSourceChangedKnowsDuckDBsETagRefusal: the message DuckDB 1.5 gave in a run during a refresh
// over s3:// is a source change; other failures, including other HTTP errors, are not retried.
func TestSourceChangedKnowsDuckDBsETagRefusal(t *testing.T) {
	seen := errors.New(duckdbSaid)
	if !SourceChanged(fmt.Errorf("query q3: %w", seen)) {
		t.Fatalf("%v: want a source change", seen)
	}
	for _, msg := range otherFailures {
		if SourceChanged(errors.New(msg)) {
			t.Errorf("%q: not a source change", msg)
		}
	}
}

// duckdbSaid is DuckDB's message, verbatim.
const duckdbSaid = `HTTP Error: ETag on reading file "s3://lake/tpch/lineitem/batch=1/part.parquet" was initially "b99e36284074d3396b1b3119d8486e09" and now it returned "6fa1b9a21071b1b7547c4d1a80e43bcc-1", this likely means the remote file has changed.`

// otherFailures are failures that are not a source change.
var otherFailures = []string{
	`HTTP Error: Unable to connect to URL "http://127.0.0.1:1/lake": 503 (Service Unavailable)`,
	`Binder Error: Referenced column "l_foo" not found`,
	`IO Error: No files found that match the pattern "s3://lake/tpch/lineitem/*.parquet"`,
}
