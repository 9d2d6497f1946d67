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

package s3store

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"strings"

	"github.com/pqcache/pqcache/cache/plan"
)

// The bounds of a listing. A store is an endpoint a user chose, and a node agent lists for every
// tenant on its node from one process: a listing must not be able to grow it without end, nor keep
// it listing for ever.
const (
	// MaxListPageBytes caps one ListObjectsV2 response body. A page holds at most 1,000 keys (S3's
	// max-keys, which the sync never raises) of at most 1,024 bytes each; the XML of one entry, with
	// every byte of its key escaped (&quot; is 6 bytes for 1) and its ETag, dates, owner and storage
	// class, stays under 7 KiB, so a page stays under 7 MiB, and S3's own pages are some 300 KiB. 16 MiB
	// is more than twice the worst honest page, and bounds what the listing holds at once (the page
	// being read and listAhead pages) to well under 100 MiB.
	MaxListPageBytes = 16 << 20
	// MaxEmptyListPages is the longest run of empty pages that say more follow. S3 may answer an empty
	// truncated page now and then (while it skips deleted or in-flight keys); a hundred in a row is a
	// store that lists nothing for ever.
	MaxEmptyListPages = 100
)

// ErrSourceMisbehaving marks a listing that broke S3's protocol in a way no retry fixes: a page over
// MaxListPageBytes, a continuation token that came back, a run of empty truncated pages over
// MaxEmptyListPages, a truncated page without a continuation token, a page that does not parse as a
// listing. The sync fails with
// wire.ReasonSourceMisbehaving, and the published data stays as it was.
var ErrSourceMisbehaving = errors.New("the store's listing misbehaves")

// ErrPanicked marks a listing or a download that hit a bug (a panic), recovered so that the
// process, and every other sync it runs, lives on; the error says what panicked, with its stack. The
// sync fails with wire.ReasonPanicked.
var ErrPanicked = errors.New("recovered from a panic")

// Page is one page of a listing: the objects the sync may take, keys relative to the strip prefix, and
// those the listing refused.
type Page struct {
	Objects []plan.Object
	Refused []Refusal
}

// Refusal is a listed object the sync must not take, and why: a key outside the listed prefix, which
// would be published under its full key, and a negative size, which would lower the free-space check.
// Err wraps plan.ErrHostileKey, so that the sync counts it as it counts keys that cannot be files.
type Refusal struct {
	// Key is relative to the strip prefix, or the full key when it is outside it.
	Key string
	Err error
}

// admit makes the keys of a page's objects, listed whole, relative to strip, and sets apart those the
// sync must not take. It reuses objs' array.
func admit(objs []plan.Object, prefix, strip string) Page {
	var p Page
	kept := objs[:0]
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, prefix) || !strings.HasPrefix(o.Key, strip) {
			p.Refused = append(p.Refused, Refusal{Key: o.Key,
				Err: fmt.Errorf("%w %q: outside the listed prefix %q", plan.ErrHostileKey, o.Key, prefix)})
			continue
		}
		o.Key = o.Key[len(strip):]
		if o.Size < 0 {
			p.Refused = append(p.Refused, Refusal{Key: o.Key,
				Err: fmt.Errorf("%w %q: listed with a negative size (%d)", plan.ErrHostileKey, o.Key, o.Size)})
			continue
		}
		kept = append(kept, o)
	}
	p.Objects = kept
	return p
}

// listGuard ends a listing that would not end: it remembers a hash of every continuation token (8
// bytes a page, whatever the token's length) and counts empty truncated pages in a row.
type listGuard struct {
	seed  maphash.Seed
	seen  map[uint64]struct{}
	empty int
}

func newListGuard() *listGuard {
	return &listGuard{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
}

// more says whether the listing goes on after a page of n objects, or why it must stop.
func (g *listGuard) more(n int, truncated bool, next string) (bool, error) {
	if !truncated {
		return false, nil
	}
	if next == "" {
		return false, fmt.Errorf("%w: a page says more follow but gives no continuation token", ErrSourceMisbehaving)
	}
	h := maphash.String(g.seed, next)
	if _, ok := g.seen[h]; ok {
		return false, fmt.Errorf("%w: continuation token %.64q came back, and the listing would not end", ErrSourceMisbehaving, next)
	}
	g.seen[h] = struct{}{}
	if n > 0 {
		g.empty = 0
		return true, nil
	}
	if g.empty++; g.empty > MaxEmptyListPages {
		return false, fmt.Errorf("%w: more than %d empty pages in a row say more follow", ErrSourceMisbehaving, MaxEmptyListPages)
	}
	return true, nil
}

// errPageTooLarge is what reading a listing page past MaxListPageBytes returns.
var errPageTooLarge = fmt.Errorf("%w: a listing page is over %d bytes", ErrSourceMisbehaving, MaxListPageBytes)

// readPage reads a listing body, up to MaxListPageBytes: one byte more says the page is over the cap.
func readPage(body io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxListPageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxListPageBytes {
		return nil, errPageTooLarge
	}
	return b, nil
}

// cappedClient caps the bodies of the responses it receives at MaxListPageBytes: the SDK's listing,
// which reads the body itself, is sent through it.
type cappedClient struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
}

func (c cappedClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxListPageBytes}
	}
	return resp, err
}

// cappedBody fails a read past its cap instead of returning more bytes.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err // the end, right at the cap
		}
		return 0, errPageTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
