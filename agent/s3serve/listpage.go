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

package s3serve

import (
	"bufio"
	"net/url"
	"strings"

	"github.com/pqcache/pqcache/cache/generations"
)

// Source is one sorted run of keys that a listing reads: a generation's object index whose keys
// appear under KeyPrefix (the S3 prefix a Dataset was synced from, so that a reader lists the keys
// it would list in the bucket).
type Source struct {
	Index     IndexFile
	KeyPrefix string
}

// ListQuery is what a ListObjectsV2 request asks for.
type ListQuery struct {
	Prefix    string
	Delimiter string
	// After is the key the page starts after (the larger of StartAfter and the continuation token's).
	After   string
	MaxKeys int
}

// Page is one listing page: objects and common prefixes in key order, and the key (an object's or a
// common prefix) the next page starts after, when the page is truncated.
type Page struct {
	Objects  []Listing
	Prefixes []string
	Next     string
}

// Listing is one object of a page under its full key.
type Listing struct {
	Key    string
	Object generations.Object
}

// List reads one page over the sources merged in key order: the keys under q.Prefix after q.After,
// with keys that hold q.Delimiter past the prefix rolled up into common prefixes (each counts as one
// key, as in S3), at most q.MaxKeys entries. A key that two sources hold is listed once, from the
// source with the longer KeyPrefix (the one a GET of the key reads). A page costs the lines it lists
// and, per common prefix, one seek past it: not a scan of what it rolls up.
func List(sources []Source, q ListQuery) (Page, error) {
	var page Page
	if q.MaxKeys <= 0 {
		return page, nil
	}
	cursors := make([]*cursor, 0, len(sources))
	for _, s := range sources {
		if c := newCursor(s, q.Prefix); c != nil {
			cursors = append(cursors, c)
		}
	}
	from, inclusive := q.After, false
	last := ""
	for n := 0; ; {
		key, obj, ok, err := next(cursors, from, inclusive)
		if err != nil || !ok {
			return page, err
		}
		cp := commonPrefix(key, q.Prefix, q.Delimiter)
		if cp != "" && cp <= q.After {
			// The page before ended in this common prefix (or inside it): it was listed.
			if from, inclusive = successor(cp), true; from == "" {
				return page, nil
			}
			continue
		}
		if n == q.MaxKeys {
			page.Next = last
			return page, nil
		}
		n++
		if cp != "" {
			page.Prefixes = append(page.Prefixes, cp)
			// Nothing sorts after the keys under cp if it is all 0xff bytes.
			if last, from, inclusive = cp, successor(cp), true; from == "" {
				return page, nil
			}
			continue
		}
		page.Objects = append(page.Objects, Listing{Key: key, Object: obj})
		last, from, inclusive = key, key, false
	}
}

// commonPrefix is the prefix, up to and including the first delimiter after prefix, that key rolls
// up into; empty when key is listed as itself.
func commonPrefix(key, prefix, delimiter string) string {
	if delimiter == "" {
		return ""
	}
	i := strings.Index(key[len(prefix):], delimiter)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delimiter)]
}

// successor is the smallest string greater than every string that begins with p, or "" when there
// is none (p is all 0xff bytes).
func successor(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// next returns the smallest key over the cursors that is after from (or equal to it, if inclusive),
// moving every cursor to it. Where two sources hold the key, the longer KeyPrefix's object wins.
func next(cursors []*cursor, from string, inclusive bool) (string, generations.Object, bool, error) {
	var (
		best    string
		bestObj generations.Object
		bestKP  = -1
		found   bool
	)
	for _, c := range cursors {
		key, obj, ok, err := c.at(from, inclusive)
		if err != nil {
			return "", generations.Object{}, false, err
		}
		if !ok {
			continue
		}
		if !found || key < best || key == best && len(c.src.KeyPrefix) > bestKP {
			best, bestObj, bestKP, found = key, obj, len(c.src.KeyPrefix), true
		}
	}
	return best, bestObj, found, nil
}

// cursor reads one source's keys in order, under the listing's prefix.
type cursor struct {
	src Source
	// inner is the listing prefix inside the source's own keys.
	inner string
	sc    *bufio.Scanner
	// key and obj are the line the scanner is on (full key); valid when has.
	key string
	obj generations.Object
	has bool
	// done says the source holds no more keys under the prefix.
	done bool
}

// newCursor returns a cursor over the keys of s under prefix, or nil when s holds none.
func newCursor(s Source, prefix string) *cursor {
	switch {
	case strings.HasPrefix(s.KeyPrefix, prefix):
		return &cursor{src: s}
	case strings.HasPrefix(prefix, s.KeyPrefix):
		return &cursor{src: s, inner: prefix[len(s.KeyPrefix):]}
	default:
		return nil
	}
}

// at moves the cursor to its first key after from (or equal to it, if inclusive) and returns it.
func (c *cursor) at(from string, inclusive bool) (string, generations.Object, bool, error) {
	if c.done {
		return "", generations.Object{}, false, nil
	}
	if c.has && (c.key > from || inclusive && c.key == from) {
		return c.key, c.obj, true, nil
	}
	if !c.has || c.key < from {
		if !c.seek(from) {
			return "", generations.Object{}, false, nil
		}
	}
	for {
		if err := c.read(); err != nil || !c.has {
			return "", generations.Object{}, false, err
		}
		if c.key > from || inclusive && c.key == from {
			return c.key, c.obj, true, nil
		}
	}
}

// seek places the scanner at the mark before the first inner key whose full key can be at least
// from; false when no key of the source can be.
func (c *cursor) seek(from string) bool {
	start := c.inner
	switch kp := c.src.KeyPrefix; {
	case strings.HasPrefix(from, kp):
		start = max(start, from[len(kp):])
	case from > kp:
		c.done = true
		return false
	}
	c.sc = c.src.Index.scanner(c.src.Index.f, c.src.Index.seek(start))
	c.has = false
	return true
}

// read reads the next line under the inner prefix.
func (c *cursor) read() error {
	if c.sc == nil && !c.seek("") {
		return nil
	}
	if !c.sc.Scan() {
		c.has, c.done = false, true
		return c.sc.Err()
	}
	k, err := generations.ObjectKey(c.sc.Bytes())
	if err != nil {
		return err
	}
	if string(k) < c.inner {
		c.has, c.key = true, "" // before the prefix: the caller reads on
		return nil
	}
	if !strings.HasPrefix(string(k), c.inner) {
		c.has, c.done = false, true
		return nil
	}
	o, err := generations.ParseObject(c.sc.Bytes())
	if err != nil {
		return err
	}
	c.key, c.obj, c.has = c.src.KeyPrefix+o.Key, o, true
	return nil
}

// URLEncode encodes a key as S3 does for encoding-type=url: each byte outside the unreserved set
// percent-encoded, spaces as '+', and '/' kept.
func URLEncode(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}
