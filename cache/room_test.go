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

package cache_test

import (
	"errors"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/test/testfiles"
)

func capAt(n int64, more ...func(*cache.Options)) func(*cache.Options) {
	return func(o *cache.Options) {
		o.MaxBytes = &n
		for _, m := range more {
			m(o)
		}
	}
}

// The byte cap counts the whole generation, kept files and copies, in a listing sync and in a
// targeted one (the manifest's size changed by the change set); over it, the sync fails with
// OverByteCap and copies nothing past the cap, and the files published before stay.
func TestTheByteCapCountsTheWholeGeneration(t *testing.T) {
	e := newEnv(t)
	a, b := testfiles.Random(40<<10, 1), testfiles.Random(40<<10, 2)
	e.put("a.bin", a)
	e.put("b.bin", b)
	e.mustSync(capAt(80 << 10))

	c := testfiles.Random(40<<10, 3)
	e.put("c.bin", c)
	rep, err := e.sync(capAt(100 << 10)) // a and b are kept (80 KiB): c is over
	if !errors.Is(err, cache.ErrOverByteCap) || rep.Reason != wire.ReasonOverByteCap {
		t.Fatalf("a listing sync over the cap: %v (reason %q)", err, rep.Reason)
	}
	if rep.BytesCopied != 0 {
		t.Errorf("copied %d bytes, want nothing past the cap", rep.BytesCopied)
	}
	e.expectFile("a.bin", a)
	e.expectAbsent("c.bin")

	rep, err = e.sync(capAt(100<<10, targeted(created(e, "c.bin", e.etagOf("c.bin")))))
	if !errors.Is(err, cache.ErrOverByteCap) || rep.BytesCopied != 0 {
		t.Fatalf("a targeted sync over the cap: %v, %d bytes copied", err, rep.BytesCopied)
	}

	// Replacing b with a smaller file makes room: a targeted sync subtracts what it replaces.
	small := testfiles.Random(10<<10, 4)
	e.put("b.bin", small)
	e.mustSync(capAt(100<<10, targeted(created(e, "b.bin", e.etagOf("b.bin")))))
	e.expectFile("b.bin", small)
	e.mustSync(capAt(120 << 10)) // a, b and c: 90 KiB
	e.expectFile("c.bin", c)
}

// The node reserve is free space no copy takes: a sync that would leave less fails with
// NodeReserve before it copies past it, and one that fits syncs.
func TestTheReserveIsFreeSpaceNoCopyTakes(t *testing.T) {
	e := newEnv(t)
	e.dir = testfiles.SmallDisk(t, "6m")
	e.put("a.bin", testfiles.Random(1<<20, 1))
	e.put("b.bin", testfiles.Random(1<<20, 2))
	rep, err := e.sync(func(o *cache.Options) { o.Reserve = 5 << 20 })
	if !errors.Is(err, cache.ErrNodeReserve) || rep.Reason != wire.ReasonNodeReserve {
		t.Fatalf("a sync into the reserve: %v (reason %q)", err, rep.Reason)
	}
	if rep.Space == nil || rep.Space.NeedBytes != 2<<20 {
		t.Errorf("space %+v, want the 2 MiB the sync needed", rep.Space)
	}
	if rep.FilesCopied > 0 {
		t.Errorf("%d files copied: the first already went into the reserve", rep.FilesCopied)
	}
	e.mustSync(func(o *cache.Options) { o.Reserve = 3 << 20 })
}
