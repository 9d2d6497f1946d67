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

package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pqcache/pqcache/api/wire"
)

// keyLog records the keys rewritten, and ends the run after stopAfter of them (or refuses them all).
type keyLog struct {
	mu        sync.Mutex
	keys      []string
	stopAfter int
	cancel    context.CancelFunc
	refuse    error
}

func (k *keyLog) Rewrite(_ context.Context, key string, _ time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.refuse != nil {
		return k.refuse
	}
	k.keys = append(k.keys, key)
	if len(k.keys) == k.stopAfter {
		k.cancel()
	}
	return nil
}

// The refresher rewrites the next share of the sorted keys each period, wrapping around, at least
// one file a period; a refusal stops it with a reason.
func TestRefresherRotatesThroughTheKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		keys    []string
		percent int
		n       int
		want    []string
	}{
		"a quarter of eight, two rounds and a half": {keys: []string{"h", "g", "f", "e", "d", "c", "b", "a"}, percent: 25, n: 5, want: []string{"a", "b", "c", "d", "e"}},
		"wraps around":               {keys: []string{"b", "a"}, percent: 50, n: 3, want: []string{"a", "b", "a"}},
		"at least one file a period": {keys: []string{"a", "b", "c"}, percent: 1, n: 2, want: []string{"a", "b"}},
		"everything each period":     {keys: []string{"a", "b"}, percent: 100, n: 4, want: []string{"a", "b", "a", "b"}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		log := &keyLog{stopAfter: tc.n, cancel: cancel}
		r := Refresher{Store: log, Keys: tc.keys, Percent: tc.percent, Every: time.Second}
		start := time.Now()
		res := r.Run(ctx)
		cancel()
		if d := cmp.Diff(tc.want, log.keys); d != "" || res.Rewrites != tc.n || res.Error != "" {
			t.Errorf("%s: rewrites %d, error %q (-want +got):\n%s", name, res.Rewrites, res.Error, d)
		}
		if wantRounds := (tc.n - 1) / r.batch(); time.Since(start) < time.Duration(wantRounds)*time.Second-100*time.Millisecond {
			t.Errorf("%s: %d rounds took %s: the periods are not waited for", name, wantRounds, time.Since(start))
		}
	}
	res := (&Refresher{Store: &keyLog{refuse: errors.New("AccessDenied")}, Keys: []string{"a"}, Percent: 10, Every: time.Second}).Run(context.Background())
	if res.Rewrites != 0 || res.ErrorReason != wire.ReasonRefreshRefused || res.Error == "" {
		t.Fatalf("refused: %+v", res)
	}
}
