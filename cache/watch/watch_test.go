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

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/notify"
)

// TestApplyBatch applies a batch of changes as a targeted sync of those keys, and settles it: a
// published batch acknowledges its messages; a failed one is handed back and flushes again. The
// whole loop against a real store is internal/cli's TestWatchAppliesVersitygwNotificationsWithoutListing.
func TestApplyBatch(t *testing.T) {
	batches := make(chan *notify.Batch, 1)
	deb := notify.NewDebouncer(notify.DebounceConfig{Window: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond},
		func(b *notify.Batch) { batches <- b })
	defer deb.Close()
	scope, err := notify.NewScope("lake", "tpch/", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	deb.Configure(Key, scope)
	acked := make(chan bool, 1)
	if _, err := deb.Add(Key, notify.Message{Changes: []notify.Change{{Bucket: "lake", Key: "tpch/a.parquet", Size: 3, ETag: "e", Sequencer: "01"}}},
		func(ok bool) { acked <- ok }); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	next := func() *notify.Batch {
		select {
		case b := <-batches:
			return b
		case <-time.After(10 * time.Second):
			t.Fatal("no batch")
			return nil
		}
	}

	var got []string
	fail := func(trigger string, _ int, _ *wire.ChangeSet) (*wire.SyncReport, error) {
		got = append(got, trigger)
		return nil, errors.New("store down")
	}
	start := time.Now()
	applyBatch(t.Context(), next(), fail, log)
	if time.Since(start) < 5*time.Second {
		t.Error("a failed batch did not wait before the next try")
	}
	select {
	case ok := <-acked:
		t.Fatalf("a failed batch settled its message (ok=%v)", ok)
	default:
	}

	publish := func(trigger string, keys int, cs *wire.ChangeSet) (*wire.SyncReport, error) {
		got = append(got, trigger)
		if keys != 1 || cs == nil || len(cs.Changes) != 1 || cs.Changes[0].Key != "tpch/a.parquet" || cs.Changes[0].Size != 3 {
			t.Errorf("change set %+v of %d keys", cs, keys)
		}
		return &wire.SyncReport{Changes: &wire.ChangeOutcome{PublishedAt: time.Now()}}, nil
	}
	applyBatch(t.Context(), next(), publish, log)
	if ok := <-acked; !ok || len(got) != 2 || got[0] != "events" || got[1] != "events" {
		t.Errorf("acknowledged %v after syncs %v", ok, got)
	}
}
