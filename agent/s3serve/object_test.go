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

package s3serve

import "testing"

// TestParseRange: the range forms S3 clients send, of an object of 100 bytes.
func TestParseRange(t *testing.T) {
	tests := []struct {
		h             string
		start, length int64
		bad           bool
	}{
		{h: "bytes=0-9", start: 0, length: 10},
		{h: "bytes=90-", start: 90, length: 10},
		{h: "bytes=95-200", start: 95, length: 5},
		{h: "bytes=-5", start: 95, length: 5},
		{h: "bytes=-500", start: 0, length: 100},
		{h: "bytes=100-", bad: true},
		{h: "bytes=5-4", bad: true},
		{h: "bytes=-0", bad: true},
		{h: "bytes=-", bad: true},
		{h: "bytes=--5", bad: true},
		{h: "items=0-1", bad: true},
	}
	for _, tt := range tests {
		sp, err := ParseRange(tt.h, 100)
		if (err != nil) != tt.bad || !tt.bad && (sp.Start != tt.start || sp.Length != tt.length || !sp.Ranged) {
			t.Errorf("%s: %+v, %v", tt.h, sp, err)
		}
	}
	if _, err := ParseRange("bytes=-5", 0); err == nil {
		t.Error("a suffix range of an empty object is satisfiable")
	}
}
