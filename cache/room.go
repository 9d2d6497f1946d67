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
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
	"github.com/pqcache/pqcache/cache/plan"
)

// ErrOverByteCap is returned when the generation a sync plans is larger than Options.MaxBytes.
var ErrOverByteCap = errors.New("over the byte cap")

// ErrNodeReserve is returned when the planned copies would leave less free space on the volume than
// Options.Reserve.
var ErrNodeReserve = errors.New("the node reserve would be taken")

// room decides, copy by copy in planning order, whether the volume and the byte cap leave room for
// the copy: feed starts a copy only while every copy planned so far fits, so that no byte is written
// past a limit; past that, it plans to the end to tell what the whole sync needs, and refuses.
type room struct {
	root     string
	maxBytes *int64
	reserve  int64
	// delta is set for a targeted sync: its generation is the manifest's (the base gen starts from)
	// changed by its actions. A listing sync's is what it keeps (kept) and what it copies.
	delta bool
	// gen is the generation's size as planned so far; need the bytes of the copies planned so far.
	gen, need, copies int64
	st                unix.Statfs_t
	free              int64
	haveFree          bool
	// refused says a copy was held back; capHit that the byte cap was passed at some point.
	refused, capHit bool
}

// kept counts a file the generation keeps unchanged.
func (r *room) kept(size int64) { r.gen += size }

// deleted counts a file the sync deletes.
func (r *room) deleted(old *manifest.Entry) {
	if r.delta && old != nil {
		r.gen -= old.Size
	}
}

// copy counts a copy and says whether it may start.
func (r *room) copy(a plan.Action) (bool, error) {
	r.need += a.Object.Size
	r.gen += a.Object.Size
	if r.delta && a.Old != nil {
		r.gen -= a.Old.Size
	}
	r.copies++
	if !r.haveFree {
		if err := unix.Statfs(r.root, &r.st); err != nil {
			return false, fmt.Errorf("reading free space of %s: %w", r.root, err)
		}
		r.free, r.haveFree = int64(r.st.Bavail)*r.st.Bsize, true
	}
	if r.overCap() {
		r.capHit = true
	}
	if r.refused || r.capHit || r.need > r.free-r.reserve {
		r.refused = true
		return false, nil
	}
	return true, nil
}

func (r *room) overCap() bool { return r.maxBytes != nil && r.gen > *r.maxBytes }

// verdict is, once planning is complete, the error of a sync that does not fit (nil if it does), and
// the room it needed.
func (r *room) verdict() (*wire.Space, error) {
	if r.overCap() || r.capHit {
		return nil, fmt.Errorf("%w: the generation would hold %d bytes, more than the Dataset's cap of %d bytes (spec.replicas.maxBytes); the last published generation stands; raise the cap or narrow include/exclude",
			ErrOverByteCap, r.gen, *r.maxBytes)
	}
	if !r.refused {
		return nil, nil
	}
	total := int64(r.st.Blocks) * r.st.Bsize
	space := &wire.Space{NeedBytes: r.need, FreeBytes: r.free, TotalBytes: total}
	if r.need > r.free {
		return space, fmt.Errorf("%w: the sync must copy %d bytes (%d files) but the volume had %d bytes free of %d; grow the volume or narrow include/exclude",
			ErrInsufficientCapacity, r.need, r.copies, r.free, total)
	}
	return space, fmt.Errorf("%w: the sync must copy %d bytes (%d files); the volume had %d bytes free of %d, and the node agent keeps %d free for the node (its node reserve); free space on the node, or narrow include/exclude",
		ErrNodeReserve, r.need, r.copies, r.free, total, r.reserve)
}
