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

package peer

import (
	"slices"
	"strings"
	"sync"

	"github.com/pqcache/pqcache/cache/generations"
)

// index is one generation's object index, in key order, as the seed published it.
type index struct {
	objects []generations.Object
}

// find returns the object named key.
func (x *index) find(key string) (generations.Object, bool) {
	i, ok := slices.BinarySearchFunc(x.objects, key, func(o generations.Object, k string) int { return strings.Compare(o.Key, k) })
	if !ok {
		return generations.Object{}, false
	}
	return x.objects[i], true
}

// after returns the objects whose keys start with prefix and sort after marker, in key order.
func (x *index) after(prefix, marker string) []generations.Object {
	from := max(prefix, marker)
	i, found := slices.BinarySearchFunc(x.objects, from, func(o generations.Object, k string) int { return strings.Compare(o.Key, k) })
	if found && from == marker {
		i++ // the marker itself was listed already
	}
	j := i
	for j < len(x.objects) && strings.HasPrefix(x.objects[j].Key, prefix) {
		j++
	}
	return x.objects[i:j]
}

// indexCache keeps the indexes of the last generations served: a follower lists a generation page
// by page and then fetches its files, and reading the index once per request would cost a scan of
// the whole data set each time.
type indexCache struct {
	mu      sync.Mutex
	entries []cachedIndex // most recently used last
}

type cachedIndex struct {
	dir string // the generation's tree; a generation number never names other contents on a volume
	idx *index
}

// cachedIndexes bounds the cache: a node serves few generations at a time (the current one of each
// Dataset, and the one before while followers catch up).
const cachedIndexes = 8

func (c *indexCache) get(root string, g int64, dir string) (*index, error) {
	c.mu.Lock()
	for i, e := range c.entries {
		if e.dir == dir {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			c.mu.Unlock()
			return e.idx, nil
		}
	}
	c.mu.Unlock()
	objs, err := generations.Objects(root, g)
	if err != nil {
		return nil, err
	}
	idx := &index{objects: objs}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.dir == dir { // another request loaded it meanwhile: keep one copy in memory
			return e.idx, nil
		}
	}
	c.entries = append(c.entries, cachedIndex{dir: dir, idx: idx})
	if len(c.entries) > cachedIndexes {
		c.entries = slices.Delete(c.entries, 0, len(c.entries)-cachedIndexes)
	}
	return idx, nil
}
