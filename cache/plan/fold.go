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

package plan

import (
	"hash/maphash"
	"unicode"
	"unicode/utf8"
)

// FoldTracker finds keys that are equal but for case ("t/A.parquet" and "t/a.parquet"): one file on
// a case-insensitive volume. It keeps a 63-bit hash of each folded key, not the key, with a seed
// chosen per tracker, so a listing cannot be crafted to make two keys collide by hash; two different
// folded keys share a hash with a probability of about n²/2⁶⁴ (5·10⁻⁸ for a million keys).
//
// Fed keys in ascending byte order, it stores only the keys that contain an upper-case ASCII letter
// or a non-ASCII byte: a key of lower-case ASCII folds to itself, and any other key that folds to it
// is ASCII with an upper-case letter where it has a lower-case one, so it sorts, and was stored,
// before it. A lower-case dataset costs nothing; a mixed-case one 11 to 21 bytes per such key (17
// measured at a million, BenchmarkFoldTracker).
type FoldTracker struct {
	seed maphash.Seed
	seen hashSet
	buf  []byte
	init bool
}

// Add records key and reports whether an earlier key folds to the same as key. Keys must come in
// ascending order; a listing that is not stops the sync anyway (ErrUnsorted).
func (t *FoldTracker) Add(key string) bool {
	if !t.init {
		t.seed, t.init = maphash.MakeSeed(), true
	}
	folded, plain := t.fold(key)
	var h uint64
	if plain {
		h = maphash.String(t.seed, key)
	} else {
		h = maphash.Bytes(t.seed, folded)
	}
	if t.seen.has(h) {
		return true
	}
	if !plain {
		t.seen.add(h)
	}
	return false
}

// hashSet is a set of 64-bit hashes, open addressing with linear probing, 0 marking a free slot: 8
// bytes a slot, 11 to 21 bytes a hash, where a map[uint64]struct{} takes about 40.
type hashSet struct {
	slots []uint64
	n     int
}

// slot returns where h is, or the free slot where it would go.
func (s *hashSet) slot(h uint64) int {
	mask := len(s.slots) - 1
	i := int(h) & mask
	for s.slots[i] != 0 && s.slots[i] != h {
		i = (i + 1) & mask
	}
	return i
}

func (s *hashSet) has(h uint64) bool {
	h |= 1 // 0 marks a free slot
	return len(s.slots) > 0 && s.slots[s.slot(h)] == h
}

func (s *hashSet) add(h uint64) {
	h |= 1
	if (s.n+1)*4 > len(s.slots)*3 { // at most three quarters full
		old := s.slots
		s.slots = make([]uint64, max(1024, 2*len(old)))
		for _, x := range old {
			if x != 0 {
				s.slots[s.slot(x)] = x
			}
		}
	}
	if i := s.slot(h); s.slots[i] == 0 {
		s.slots[i] = h
		s.n++
	}
}

// fold returns key folded, and plain true (and no bytes) when key is lower-case ASCII, which folds to
// itself. ASCII letters fold to lower case; a non-ASCII rune folds to its Unicode lower case unless
// that is ASCII (the Kelvin sign, the dotted capital I), which file systems do not agree on.
func (t *FoldTracker) fold(key string) ([]byte, bool) {
	i := 0
	for i < len(key) && key[i] < utf8.RuneSelf && (key[i] < 'A' || key[i] > 'Z') {
		i++
	}
	if i == len(key) {
		return nil, true
	}
	b := append(t.buf[:0], key[:i]...)
	for i < len(key) {
		r, n := utf8.DecodeRuneInString(key[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, key[i]) // not UTF-8: the byte as it is
			i++
			continue
		}
		i += n
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= utf8.RuneSelf:
			if l := unicode.ToLower(r); l >= utf8.RuneSelf {
				r = l
			}
		}
		b = utf8.AppendRune(b, r)
	}
	t.buf = b
	return b, false
}
