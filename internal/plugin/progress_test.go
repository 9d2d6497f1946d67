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

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// While the sync still lists, its totals grow: the line says so instead of drawing a bar that would
// fill and then jump back, or promising a time left.
func TestProgressLineWhileListing(t *testing.T) {
	ds := &datav1alpha1.Dataset{}
	ds.Status.Progress = &datav1alpha1.SyncProgress{Listing: true, FilesDone: 6, FilesTotal: 9, BytesDone: 1 << 20, BytesTotal: 2 << 20, BytesPerSecond: 64 << 10}
	if got := progressLine(ds); !strings.HasPrefix(got, "listing: 6/9+ files") || strings.Contains(got, "[") || strings.Contains(got, "left") {
		t.Errorf("while listing: %q", got)
	}
	ds.Status.Progress.Listing = false
	ds.Status.Progress.RemainingMillis = 16000
	if got := progressLine(ds); !strings.HasPrefix(got, "[===============               ] 6/9 files") || !strings.HasSuffix(got, "16s left") {
		t.Errorf("listed: %q", got)
	}
}
