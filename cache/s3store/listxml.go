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
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/cache/plan"
)

// parseList reads a ListObjectsV2 response. S3 and the stores that imitate it write the same flat
// document (ListBucketResult of Contents elements, no attributes, no CDATA, no namespace prefixes):
// scanning for the few elements the sync uses is some ten times faster than a general XML decoder.
// A document that strays from that shape is decoded with encoding/xml instead.
func parseList(doc []byte, strip string) (listPage, error) {
	if p, ok := scanList(doc, strip); ok {
		return p, nil
	}
	return decodeList(doc, strip)
}

// errShape: a page that is not a listing. No retry within the sync fixes a store that answers so (a
// body cut short by a lying Content-Length, or not XML at all), so it is the store misbehaving.
var errShape = fmt.Errorf("%w: a page that does not parse as a listing", ErrSourceMisbehaving)

func scanList(doc []byte, strip string) (listPage, bool) {
	var p listPage
	if !bytes.Contains(doc, []byte("<ListBucketResult")) || bytes.Contains(doc, []byte("<![CDATA[")) {
		return p, false
	}
	rest := doc
	for {
		i := bytes.IndexByte(rest, '<')
		if i < 0 {
			return p, true
		}
		rest = rest[i+1:]
		end := bytes.IndexByte(rest, '>')
		if end < 0 {
			return p, false
		}
		tag := rest[:end]
		rest = rest[end+1:]
		switch string(tag) {
		case "Contents":
			stop := bytes.Index(rest, []byte("</Contents>"))
			if stop < 0 {
				return p, false
			}
			obj, ok := scanObject(rest[:stop], strip)
			if !ok {
				return p, false
			}
			p.objects = append(p.objects, obj)
			rest = rest[stop+len("</Contents>"):]
		case "IsTruncated":
			v, ok := text(&rest, "IsTruncated")
			if !ok {
				return p, false
			}
			p.truncated = v == "true"
		case "NextContinuationToken":
			v, ok := text(&rest, "NextContinuationToken")
			if !ok {
				return p, false
			}
			p.next = v
		case "CommonPrefixes":
			stop := bytes.Index(rest, []byte("</CommonPrefixes>"))
			if stop < 0 {
				return p, false
			}
			rest = rest[stop+len("</CommonPrefixes>"):]
		default:
			name, _, _ := bytes.Cut(tag, []byte(" "))
			if bytes.IndexByte(name, ':') >= 0 { // a namespace prefix: not the plain shape
				return p, false
			}
		}
	}
}

// scanObject reads the elements of one Contents.
func scanObject(b []byte, strip string) (plan.Object, bool) {
	var o plan.Object
	seen := 0
	for {
		i := bytes.IndexByte(b, '<')
		if i < 0 {
			return o, seen&1 != 0 // a Key at least
		}
		b = b[i+1:]
		end := bytes.IndexByte(b, '>')
		if end < 0 {
			return o, false
		}
		tag := string(b[:end])
		b = b[end+1:]
		if strings.HasSuffix(tag, "/") { // an empty element, <ChecksumAlgorithm/>
			continue
		}
		switch tag {
		case "Key", "LastModified", "ETag", "Size", "ChecksumAlgorithm", "ChecksumType":
		default:
			if strings.IndexByte(tag, ' ') >= 0 || strings.IndexByte(tag, ':') >= 0 {
				return o, false
			}
			if tag != "" && tag[0] != '/' {
				stop := bytes.Index(b, []byte("</"+tag+">")) // Owner, StorageClass...: skipped
				if stop < 0 {
					return o, false
				}
				b = b[stop+len(tag)+3:]
			}
			continue
		}
		v, ok := text(&b, tag)
		if !ok {
			return o, false
		}
		switch tag {
		case "Key":
			o.Key, seen = strings.TrimPrefix(v, strip), seen|1
		case "LastModified":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return o, false
			}
			o.LastModified = t.UTC()
		case "ETag":
			o.ETag = v
		case "Size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return o, false
			}
			o.Size = n
		case "ChecksumAlgorithm":
			if o.ChecksumAlgorithm == "" {
				o.ChecksumAlgorithm = v
			}
		case "ChecksumType":
			o.ChecksumType = v
		}
	}
}

// text returns the unescaped text up to </tag> and moves *b past it.
func text(b *[]byte, tag string) (string, bool) {
	closing := "</" + tag + ">"
	stop := bytes.Index(*b, []byte(closing))
	if stop < 0 {
		return "", false
	}
	raw := (*b)[:stop]
	*b = (*b)[stop+len(closing):]
	if bytes.IndexByte(raw, '<') >= 0 {
		return "", false
	}
	if bytes.IndexByte(raw, '&') < 0 {
		return string(raw), true
	}
	return unescape(raw)
}

// unescape resolves XML's predefined entities and character references.
func unescape(raw []byte) (string, bool) {
	var sb strings.Builder
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '&')
		if i < 0 {
			sb.Write(raw)
			break
		}
		sb.Write(raw[:i])
		raw = raw[i+1:]
		j := bytes.IndexByte(raw, ';')
		if j < 0 {
			return "", false
		}
		ent := string(raw[:j])
		raw = raw[j+1:]
		switch ent {
		case "lt":
			sb.WriteByte('<')
		case "gt":
			sb.WriteByte('>')
		case "amp":
			sb.WriteByte('&')
		case "quot":
			sb.WriteByte('"')
		case "apos":
			sb.WriteByte('\'')
		default:
			var (
				n   uint64
				err error
			)
			switch {
			case strings.HasPrefix(ent, "#x"):
				n, err = strconv.ParseUint(ent[2:], 16, 32)
			case strings.HasPrefix(ent, "#"):
				n, err = strconv.ParseUint(ent[1:], 10, 32)
			default:
				return "", false
			}
			if err != nil {
				return "", false
			}
			sb.WriteRune(rune(n))
		}
	}
	return sb.String(), true
}

// decodeList is parseList's general path.
func decodeList(doc []byte, strip string) (listPage, error) {
	var r struct {
		IsTruncated           bool
		NextContinuationToken string
		Contents              []struct {
			Key               string
			LastModified      time.Time
			ETag              string
			Size              int64
			ChecksumAlgorithm []string
			ChecksumType      string
		}
	}
	if err := xml.Unmarshal(doc, &r); err != nil {
		return listPage{}, fmt.Errorf("%w: %w", errShape, err)
	}
	p := listPage{truncated: r.IsTruncated, next: r.NextContinuationToken}
	for _, c := range r.Contents {
		o := plan.Object{Key: strings.TrimPrefix(c.Key, strip), Size: c.Size, LastModified: c.LastModified.UTC(), ETag: c.ETag, ChecksumType: c.ChecksumType}
		if len(c.ChecksumAlgorithm) > 0 {
			o.ChecksumAlgorithm = c.ChecksumAlgorithm[0]
		}
		p.objects = append(p.objects, o)
	}
	return p, nil
}
