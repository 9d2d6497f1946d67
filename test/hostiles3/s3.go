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

package hostiles3

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// pageKeys is how many keys a listing page holds, as S3's default max-keys.
const pageKeys = 1000

// entry is one <Contents> of a listing.
type entry struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
}

// listResult is a ListObjectsV2 answer.
type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string   `xml:"Name"`
	Prefix                string   `xml:"Prefix"`
	KeyCount              int      `xml:"KeyCount"`
	MaxKeys               int      `xml:"MaxKeys"`
	IsTruncated           bool     `xml:"IsTruncated"`
	ContinuationToken     string   `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string   `xml:"NextContinuationToken,omitempty"`
	Contents              []entry  `xml:"Contents"`
}

// page returns the well-behaved ListObjectsV2 page that q asks for.
func (s *Server) page(bucket string, q url.Values) (listResult, error) {
	prefix := q.Get("prefix")
	keys, objs, err := s.keys(bucket, prefix)
	if err != nil {
		return listResult{}, err
	}
	limit := pageKeys
	if m, err := strconv.Atoi(q.Get("max-keys")); err == nil && m >= 0 && m < limit {
		limit = m
	}
	after := q.Get("start-after")
	if tok := q.Get("continuation-token"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return listResult{}, fmt.Errorf("continuation token %q: %w", tok, err)
		}
		after = string(b)
	}
	res := listResult{Name: bucket, Prefix: prefix, MaxKeys: limit, ContinuationToken: q.Get("continuation-token")}
	for _, k := range keys {
		if k <= after {
			continue
		}
		if len(res.Contents) == limit {
			res.IsTruncated = true
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Contents[len(res.Contents)-1].Key))
			break
		}
		o := objs[k]
		res.Contents = append(res.Contents, entry{Key: k, LastModified: o.modified.Format("2006-01-02T15:04:05.000Z"),
			ETag: o.etag, Size: int64(len(o.data)), StorageClass: "STANDARD"})
	}
	res.KeyCount = len(res.Contents)
	return res, nil
}

// listing is page as its XML document.
func (s *Server) listing(bucket string, q url.Values) ([]byte, error) {
	res, err := s.page(bucket, q)
	if err != nil {
		return nil, err
	}
	return encode(res), nil
}

func encode(res listResult) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	if err := xml.NewEncoder(&b).Encode(res); err != nil {
		panic(fmt.Sprintf("encoding a listing: %v", err)) // plain strings and numbers only: cannot fail
	}
	return b.Bytes()
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// span is the part of an object a GET asks for: [start, end], and whether it was a Range request.
type span struct {
	start, end int64
	ranged     bool
}

// spanOf reads r's Range header ("bytes=A-B" or "bytes=A-") against an object of size n.
func spanOf(r *http.Request, n int64) (span, bool) {
	h := r.Header.Get("Range")
	if h == "" {
		return span{0, n - 1, false}, true
	}
	a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	start, err := strconv.ParseInt(a, 10, 64)
	if !ok || err != nil || start < 0 || start >= n {
		return span{}, false
	}
	end := n - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return span{}, false
		}
		end = min(end, n-1)
	}
	return span{start, end, true}, true
}

// objectHeaders sets a GET's or HEAD's headers for the span sp of o, with Content-Length length.
func objectHeaders(h http.Header, o object, sp span, length int64) {
	h.Set("ETag", o.etag)
	h.Set("Last-Modified", o.modified.Format(http.TimeFormat))
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	if sp.ranged {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", sp.start, sp.end, len(o.data)))
	}
}

// serveObject answers a GET or HEAD of o with body (o's bytes, or others of the same length).
func serveObject(w http.ResponseWriter, r *http.Request, o object, body []byte) {
	if m := r.Header.Get("If-Match"); m != "" && m != o.etag {
		s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed", "the ETag is "+o.etag)
		return
	}
	sp, ok := spanOf(r, int64(len(o.data)))
	if !ok {
		s3Error(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", r.Header.Get("Range"))
		return
	}
	objectHeaders(w.Header(), o, sp, sp.end-sp.start+1)
	status := http.StatusOK
	if sp.ranged {
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body[sp.start : sp.end+1])
	}
}

// timestamp is a listing's LastModified for now.
func timestamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
