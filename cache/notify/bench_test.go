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

package notify

import (
	"fmt"
	"testing"
)

// BenchmarkParse measures one SNS-wrapped AWS record, the most nested common envelope.
func BenchmarkParse(b *testing.B) {
	body := []byte(snsWrap(records(awsRecord)))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body, KeysAuto); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDebouncerAdd measures adding one change to a pending batch of up to 5,000 keys (the
// default overflow limit), on a clock that never fires.
func BenchmarkDebouncerAdd(b *testing.B) {
	d := NewDebouncer(DebounceConfig{Clock: newFakeClock()}, func(*Batch) {})
	defer d.Close()
	scope, err := NewScope("lake", "tpch/", []string{"**/*.parquet"}, []string{"**/_tmp/**"}, []string{"lineitem/dt=2026-01-02/"})
	if err != nil {
		b.Fatal(err)
	}
	d.Configure(dsKey, scope)
	changes := make([]Message, 4096)
	for i := range changes {
		changes[i] = Message{Changes: []Change{put(fmt.Sprintf("tpch/lineitem/dt=2026-01-%02d/part-%d.parquet", i%28+1, i), "01")}}
	}
	i := 0
	for b.Loop() {
		if _, err := d.Add(dsKey, changes[i%len(changes)], nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
