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
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/cache/generations"
)

// maxKeys is the most keys a listing page holds, as in S3.
const maxKeys = 1000

// listResult is a ListObjectsV2 response.
type listResult struct {
	XMLName               xml.Name      `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string        `xml:"Name"`
	Prefix                string        `xml:"Prefix"`
	KeyCount              int           `xml:"KeyCount"`
	MaxKeys               int           `xml:"MaxKeys"`
	IsTruncated           bool          `xml:"IsTruncated"`
	ContinuationToken     string        `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string        `xml:"NextContinuationToken,omitempty"`
	StartAfter            string        `xml:"StartAfter,omitempty"`
	Contents              []listedEntry `xml:"Contents"`
}

type listedEntry struct {
	Key               string `xml:"Key"`
	LastModified      string `xml:"LastModified"`
	ETag              string `xml:"ETag"`
	Size              int64  `xml:"Size"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	StorageClass      string `xml:"StorageClass"`
}

// list answers ListObjectsV2 over one generation: the prefix must begin with "<generation>/". The
// continuation token is the last key returned, encoded.
func (s *Server) list(w http.ResponseWriter, r *http.Request, bucket, root string) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	g, rest, ok := splitGeneration(prefix)
	if !ok || !strings.Contains(prefix, "/") {
		writeError(w, r, http.StatusBadRequest, "InvalidArgument", "a peer lists one generation: the prefix must begin with <generation>/")
		return
	}
	limit := maxKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, r, http.StatusBadRequest, "InvalidArgument", "max-keys must be a whole number")
			return
		}
		limit = min(n, maxKeys)
	}
	marker, err := listMarker(q.Get("continuation-token"), q.Get("start-after"), g)
	if err != nil {
		writeError(w, r, http.StatusBadRequest, "InvalidArgument", err.Error())
		return
	}
	lease, idx, ok := s.hold(w, r, root, g)
	if !ok {
		return
	}
	defer lease.Release()

	genPrefix := Prefix(g)
	res := listResult{Name: bucket, Prefix: prefix, MaxKeys: limit,
		ContinuationToken: q.Get("continuation-token"), StartAfter: q.Get("start-after")}
	var objs []generations.Object
	// max-keys=0 asks for no key: S3 answers an empty page that is not truncated, and an empty page
	// has no last key to continue after.
	if limit > 0 {
		objs, res.IsTruncated, err = idx.after(rest, marker, limit)
	}
	idx.close()
	if err != nil {
		writeError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if res.IsTruncated {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(genPrefix + objs[len(objs)-1].Key))
	}
	res.KeyCount = len(objs)
	res.Contents = make([]listedEntry, len(objs))
	for i, o := range objs {
		res.Contents[i] = listed(genPrefix, o)
	}
	w.Header().Set("Content-Type", "application/xml")
	if _, err := io.WriteString(w, xml.Header); err != nil {
		s.log().Debug("Listing not sent", "remote", r.RemoteAddr, "error", err)
		return
	}
	if err := xml.NewEncoder(w).Encode(res); err != nil {
		s.log().Debug("Listing not sent", "remote", r.RemoteAddr, "error", err)
	}
}

// listMarker returns the key, relative to the generation, after which the page starts.
func listMarker(token, startAfter string, g int64) (string, error) {
	marker := startAfter
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return "", errBadToken
		}
		marker = string(b)
	}
	if marker == "" {
		return "", nil
	}
	mg, rest, ok := splitGeneration(marker)
	if !ok || mg != g {
		return "", errBadToken
	}
	return rest, nil
}

var errBadToken = errors.New("the continuation token or start-after is not a key of this generation")

// listed is how one object appears in a listing.
func listed(genPrefix string, o generations.Object) listedEntry {
	e := listedEntry{Key: genPrefix + o.Key, LastModified: o.LastModified.UTC().Format(time.RFC3339Nano), ETag: o.ETag, Size: o.Size,
		StorageClass: "STANDARD"}
	if alg, _, ok := strings.Cut(o.Checksum, ":"); ok {
		e.ChecksumAlgorithm, e.ChecksumType = alg, "FULL_OBJECT"
	}
	return e
}
