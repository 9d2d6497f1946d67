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
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pqcache/pqcache/cache/plan"
)

// A listing page is decoded as it arrives: what is held at once is one element of the document (one
// Contents, some 300 bytes from S3) and one read's worth of bytes, not the page, which may be up to
// MaxListPageBytes. The fast scanner reads S3's plain shape; from the first element it declines, an
// encoding/xml Decoder reads the rest of the document from the same stream, one token at a time.

// readChunk is how much the scanner asks its reader for at once.
const readChunk = 32 << 10

// readList reads a ListObjectsV2 body, up to MaxListPageBytes (past it, errPageTooLarge), as it
// arrives.
func readList(body io.Reader, strip string) (listPage, error) {
	sc := &listScanner{r: &cappedBody{ReadCloser: io.NopCloser(body), left: MaxListPageBytes}, strip: strip}
	if sc.scan() {
		return sc.page, nil
	}
	if sc.err != nil {
		return listPage{}, sc.err
	}
	// The scanner stopped at the '<' of an element it does not read: the decoder goes on from there,
	// inside a root element of its own when the scanner had read the document's.
	head := ""
	if sc.rooted {
		head = "<ListBucketResult>"
	}
	rest := io.MultiReader(strings.NewReader(head), bytes.NewReader(sc.buf[sc.off:]), sc.r)
	p := sc.page
	if err := decodeListFrom(xml.NewDecoder(rest), &p, strip); err != nil {
		return listPage{}, err
	}
	return p, nil
}

// listScanner reads S3's plain shape of a listing (ListBucketResult of Contents elements, no
// attributes, no CDATA, comments or namespace prefixes) from r, one element at a time.
type listScanner struct {
	r     io.Reader
	strip string
	buf   []byte
	off   int // the first byte of buf not read yet
	eof   bool
	err   error
	// rooted is set once the document's ListBucketResult start tag is read.
	rooted bool
	page   listPage
}

// fill reads more of r into buf, and says whether there may be more to read.
func (s *listScanner) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	if s.off > 0 && s.off >= len(s.buf)/2 {
		n := copy(s.buf, s.buf[s.off:])
		s.buf, s.off = s.buf[:n], 0
	}
	s.buf = slices.Grow(s.buf, readChunk)
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	switch {
	case errors.Is(err, io.EOF):
		s.eof = true
	case err != nil:
		s.err = fmt.Errorf("reading a listing: %w", err)
	}
	return true
}

// find returns where sep starts in the unread bytes, at from or after, reading more as it needs;
// -1 when the document ends first.
func (s *listScanner) find(from int, sep string) int {
	for {
		if i := bytes.Index(s.buf[s.off+from:], []byte(sep)); i >= 0 {
			return from + i
		}
		from = max(from, len(s.buf)-s.off-len(sep)+1)
		if !s.fill() {
			return -1
		}
	}
}

// skipText moves to the next '<', dropping the text before it as it reads (an endless run of
// whitespace costs nothing), and says whether there is one.
func (s *listScanner) skipText() bool {
	for {
		if i := bytes.IndexByte(s.buf[s.off:], '<'); i >= 0 {
			s.off += i
			return true
		}
		s.off = len(s.buf)
		if !s.fill() {
			return false
		}
	}
}

// scan reads elements until the document ends (true) or one it does not read (false, off at its
// '<'), or a read fails (false, err).
func (s *listScanner) scan() bool {
	for {
		if !s.skipText() {
			return s.err == nil && s.rooted
		}
		gt := s.find(1, ">")
		if gt < 0 {
			return false
		}
		tag := string(s.buf[s.off+1 : s.off+gt])
		if !s.element(tag, gt+1) {
			return false
		}
	}
}

// element reads the element whose start tag, tag, ends at end (relative to off), and moves past it.
func (s *listScanner) element(tag string, end int) bool {
	switch tag {
	case "Contents", "IsTruncated", "NextContinuationToken", "CommonPrefixes":
		stop := s.find(end, "</"+tag+">")
		if stop < 0 {
			return false
		}
		body := s.buf[s.off+end : s.off+stop]
		if bytes.Contains(body, []byte("<!")) { // CDATA or a comment: encoding/xml's
			return false
		}
		switch tag {
		case "Contents":
			obj, ok := scanObject(body, s.strip)
			if !ok {
				return false
			}
			s.page.objects = append(s.page.objects, obj)
		case "IsTruncated", "NextContinuationToken":
			v, ok := textOf(body)
			if !ok {
				return false
			}
			if tag == "IsTruncated" {
				s.page.truncated = v == "true"
			} else {
				s.page.next = v
			}
		}
		s.off += stop + len(tag) + 3
		return true
	}
	name, _, _ := strings.Cut(tag, " ")
	switch {
	case strings.HasPrefix(tag, "!") || strings.Contains(name, ":"):
		return false // CDATA, a comment, a DOCTYPE, a namespace prefix
	case strings.HasPrefix(tag, "?") || strings.HasPrefix(tag, "/") || s.rooted:
	case name == "ListBucketResult":
		s.rooted = true
	default:
		return false // another document
	}
	s.off += end
	return true
}

// textOf is an element's text: no markup, entities resolved.
func textOf(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '<') >= 0 {
		return "", false
	}
	if bytes.IndexByte(raw, '&') < 0 {
		return string(raw), true
	}
	return unescape(raw)
}

// contentsXML is one Contents, as encoding/xml reads it.
type contentsXML struct {
	Key               string
	LastModified      time.Time
	ETag              string
	Size              int64
	ChecksumAlgorithm []string
	ChecksumType      string
}

// decodeListFrom reads the rest of a listing with d, one token at a time and one Contents at a
// time, into p: the children of the root that the sync uses; the rest is skipped.
func decodeListFrom(d *xml.Decoder, p *listPage, strip string) error {
	depth, started := 0, false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) && started && depth == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errShape, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			started = true
			if depth == 1 {
				if done, err := decodeChild(d, &t, p, strip); err != nil {
					return fmt.Errorf("%w: %w", errShape, err)
				} else if done {
					continue
				}
			}
			depth++
		case xml.EndElement:
			if depth--; depth == 0 {
				return nil // the root's end: what follows is not the listing's
			}
		}
	}
}

// decodeChild decodes one child of the root that the sync uses, and says whether it did.
func decodeChild(d *xml.Decoder, t *xml.StartElement, p *listPage, strip string) (bool, error) {
	switch t.Name.Local {
	case "Contents":
		var c contentsXML
		if err := d.DecodeElement(&c, t); err != nil {
			return true, err
		}
		o := plan.Object{Key: strings.TrimPrefix(c.Key, strip), Size: c.Size, LastModified: c.LastModified.UTC(), ETag: c.ETag, ChecksumType: c.ChecksumType}
		if len(c.ChecksumAlgorithm) > 0 {
			o.ChecksumAlgorithm = c.ChecksumAlgorithm[0]
		}
		p.objects = append(p.objects, o)
	case "IsTruncated":
		return true, d.DecodeElement(&p.truncated, t)
	case "NextContinuationToken":
		return true, d.DecodeElement(&p.next, t)
	default:
		return false, nil
	}
	return true, nil
}
