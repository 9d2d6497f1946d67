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

package watch

// The freshness an event-driven refresh gives, measured from outside: `pqcache-testkit lag` (test/cmd/pqcache-testkit) runs
// it against pqcache watch, or against a Dataset's volume mounted read-only in a pod.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pqcache/pqcache/cache/s3store"
)

// LagReport is what MeasureLag found, in milliseconds.
type LagReport struct {
	Rate      float64 `json:"rate"`
	Written   int     `json:"written"`
	Published int     `json:"published"`
	P50       int64   `json:"p50Millis"`
	P90       int64   `json:"p90Millis"`
	P99       int64   `json:"p99Millis"`
	Max       int64   `json:"maxMillis"`
	// PutP50 is the median time a PUT took, for context.
	PutP50 int64 `json:"putP50Millis"`
}

// MeasureLag writes count objects of size bytes at rate per second under prefix (prefix lag-RUN/NNNNNN.bin)
// and watches data, the directory a refresh keeps, for each to appear, timing each from the end of its
// PUT to its publication. It waits up to timeout after the last write; the report it returns with an
// error says how many did appear.
func MeasureLag(ctx context.Context, store *s3store.Store, prefix, data string, rate float64, count, size int, timeout time.Duration) (*LagReport, error) {
	run := fmt.Sprintf("lag-%d", time.Now().UnixNano())
	written := make([]time.Time, count)
	puts := make([]time.Duration, 0, count)
	lags := make([]time.Duration, 0, count)
	published := make([]bool, count)
	body := make([]byte, size)
	start := time.Now()
	next, pendingFrom := 0, 0
	deadline := time.Time{}
	for {
		now := time.Now()
		// Write every object whose time has come.
		for next < count && !now.Before(start.Add(time.Duration(float64(next)/rate*float64(time.Second)))) {
			for i := range body {
				body[i] = byte(rand.IntN(256))
			}
			key := fmt.Sprintf("%s%s/%06d.bin", prefix, run, next)
			t0 := time.Now()
			if err := store.Put(ctx, key, bytes.NewReader(body), int64(size)); err != nil {
				return nil, fmt.Errorf("writing %s: %w", key, err)
			}
			written[next] = time.Now()
			puts = append(puts, written[next].Sub(t0))
			next++
			if next == count {
				deadline = time.Now().Add(timeout)
			}
			now = time.Now()
		}
		// Look for what was written and has not appeared yet.
		for i := pendingFrom; i < next; i++ {
			if published[i] {
				continue
			}
			if _, err := os.Stat(filepath.Join(data, run, fmt.Sprintf("%06d.bin", i))); err == nil {
				published[i] = true
				lags = append(lags, time.Since(written[i]))
			}
		}
		for pendingFrom < next && published[pendingFrom] {
			pendingFrom++
		}
		if pendingFrom == count || (next == count && time.Now().After(deadline)) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	rep := &LagReport{Rate: rate, Written: count, Published: len(lags)}
	slices.Sort(lags)
	slices.Sort(puts)
	pct := func(d []time.Duration, p float64) int64 {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))].Milliseconds()
	}
	rep.P50, rep.P90, rep.P99, rep.Max = pct(lags, 0.50), pct(lags, 0.90), pct(lags, 0.99), pct(lags, 1)
	rep.PutP50 = pct(puts, 0.5)
	if rep.Published < count {
		return rep, fmt.Errorf("%d of %d objects did not appear in %s within %s of the last write", count-rep.Published, count, data, timeout)
	}
	return rep, nil
}
