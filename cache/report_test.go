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

package cache

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestCompactFitsATerminationMessage(t *testing.T) {
	r := &Report{Result: ResultFailed, Reason: ReasonHostileKeys, Message: strings.Repeat("m", 1000), FilesCopied: 7, FilesFailed: 500}
	for i := range maxReportedFailures {
		r.Failed = append(r.Failed, FileError{Key: fmt.Sprintf("very/long/key/%0200d", i), Error: strings.Repeat("e", 200)})
	}
	r.Layout.Advice = []string{strings.Repeat("a", 300), strings.Repeat("b", 300)}
	data, err := r.Compact(TerminationMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > TerminationMessageLimit {
		t.Fatalf("compact report is %d bytes", len(data))
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.FilesCopied != 7 || back.FilesFailed != 500 || back.Reason != ReasonHostileKeys || len(back.Failed) == 0 {
		t.Fatalf("compact report lost what matters: %+v", back)
	}
	if len(r.Failed) != maxReportedFailures {
		t.Fatal("Compact changed the report it was given")
	}
}
