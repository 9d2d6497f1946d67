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
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/cache/generations"
)

// list answers ListObjectsV2 over one generation: the prefix must begin with "<generation>/". The
// continuation token is the last key returned, encoded.
func (s *Server) list(w http.ResponseWriter, r *http.Request, bucket, root string) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	g, rest, ok := splitGeneration(prefix)
	if !ok || !strings.Contains(prefix, "/") {
		s3serve.WriteError(w, r, http.StatusBadRequest, "InvalidArgument", "a peer lists one generation: the prefix must begin with <generation>/")
		return
	}
	limit := s3serve.MaxKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s3serve.WriteError(w, r, http.StatusBadRequest, "InvalidArgument", "max-keys must be a whole number")
			return
		}
		limit = min(n, s3serve.MaxKeys)
	}
	marker, err := listMarker(q.Get("continuation-token"), q.Get("start-after"), g)
	if err != nil {
		s3serve.WriteError(w, r, http.StatusBadRequest, "InvalidArgument", err.Error())
		return
	}
	lease, idx, ok := s.hold(w, r, root, g)
	if !ok {
		return
	}
	defer lease.Release()

	genPrefix := Prefix(g)
	res := s3serve.ListResult{Name: bucket, Prefix: prefix, MaxKeys: limit,
		ContinuationToken: q.Get("continuation-token"), StartAfter: q.Get("start-after")}
	var objs []generations.Object
	// max-keys=0 asks for no key: S3 answers an empty page that is not truncated, and an empty page
	// has no last key to continue after.
	if limit > 0 {
		objs, res.IsTruncated, err = idx.After(rest, marker, limit)
	}
	idx.Close()
	if err != nil {
		s3serve.WriteError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if res.IsTruncated {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(genPrefix + objs[len(objs)-1].Key))
	}
	res.KeyCount = len(objs)
	res.Contents = make([]s3serve.ListedEntry, len(objs))
	for i, o := range objs {
		res.Contents[i] = s3serve.Listed(genPrefix, o)
	}
	s3serve.WriteXML(w, r, res, s.log())
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
