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
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pqcache/pqcache/cache/s3store"
)

// A sync's reason is its first cause, whichever of its parts noticed the cancellation first: a panic
// in one range of a file cancels the sibling ranges, whose "context canceled" used to win the race to
// be the sync's error at times (SyncFailed where the cause was Panicked). A cancellation from outside,
// which has no cause of its own, leaves the error as it is.
func TestTheFirstCauseWinsOverTheCancellationItCaused(t *testing.T) {
	panicked := fmt.Errorf("fetching a range of a.bin: %w: boom", s3store.ErrPanicked)
	cancelled := fmt.Errorf("GET a.bin: %w", context.Canceled)
	for _, tc := range []struct {
		name       string
		cause, err error
		want       error
	}{
		{"a panic's cancellation", panicked, cancelled, s3store.ErrPanicked},
		{"the deadline", ErrSyncDeadline, cancelled, ErrSyncDeadline},
		{"stopped from outside", context.Canceled, cancelled, context.Canceled},
		{"no cancellation", nil, ErrFilesFailed, ErrFilesFailed},
		{"no error", panicked, nil, nil},
	} {
		got := deadlineOr(tc.cause, tc.err)
		if tc.want == nil && got != nil || tc.want != nil && !errors.Is(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	var s syncer
	if r := s.reason(deadlineOr(panicked, cancelled)); r != "Panicked" {
		t.Errorf("the reason of a panic's cancellation is %s, want Panicked", r)
	}
}
