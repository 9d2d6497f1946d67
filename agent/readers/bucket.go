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

package readers

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/agent/s3serve"
)

// bucket answers the requests on a bucket itself: ListObjectsV2, GetBucketLocation and HeadBucket.
func (s *Server) bucket(w http.ResponseWriter, r *http.Request, req request, served []Served) {
	q := r.URL.Query()
	region := served[0].Region
	if region == "" {
		region = "us-east-1"
	}
	w.Header().Set("X-Amz-Bucket-Region", region)
	switch {
	case r.Method == http.MethodHead:
		w.WriteHeader(http.StatusOK)
	case q.Has("location"):
		loc := region
		if loc == "us-east-1" {
			loc = "" // as S3 answers for us-east-1
		}
		s3serve.WriteXML(w, r, locationConstraint{Region: loc}, s.log())
	case q.Get("list-type") == "2":
		s.list(w, r, req, served)
	case len(q) == 0 || q.Has("prefix") || q.Has("delimiter") || q.Has("marker"):
		s3serve.WriteError(w, r, http.StatusNotImplemented, "NotImplemented", "this endpoint lists with ListObjectsV2 (list-type=2) only")
	default:
		s3serve.WriteError(w, r, http.StatusNotImplemented, "NotImplemented", "this endpoint serves ListObjectsV2, GetObject, HeadObject, HeadBucket, GetBucketLocation and ListBuckets")
	}
}

type locationConstraint struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

// list answers ListObjectsV2 over the session's generations of the bucket's Datasets.
func (s *Server) list(w http.ResponseWriter, r *http.Request, req request, served []Served) {
	q := r.URL.Query()
	query, err := listQuery(q)
	if err != nil {
		s3serve.WriteError(w, r, http.StatusBadRequest, "InvalidArgument", err.Error())
		return
	}
	var sources []s3serve.Source
	for _, ds := range served {
		if !strings.HasPrefix(ds.Prefix, query.Prefix) && !strings.HasPrefix(query.Prefix, ds.Prefix) {
			continue // none of its keys can be listed
		}
		held, done, ok := s.acquire(w, r, req, ds)
		if !ok {
			return
		}
		defer done()
		sources = append(sources, s3serve.Source{Index: held.Index, KeyPrefix: ds.Prefix})
	}
	page, err := s3serve.List(sources, query)
	if err != nil {
		s3serve.WriteError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	s3serve.WriteXML(w, r, listResult(req.bucket, q, query, page), s.log())
}

// listQuery reads a ListObjectsV2 request's parameters.
func listQuery(q map[string][]string) (s3serve.ListQuery, error) {
	get := func(k string) string { return first(q, k) }
	lq := s3serve.ListQuery{Prefix: get("prefix"), Delimiter: get("delimiter"), After: get("start-after"), MaxKeys: s3serve.MaxKeys}
	if v := get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return lq, fmt.Errorf("max-keys %q is not a whole number", v)
		}
		lq.MaxKeys = min(n, s3serve.MaxKeys)
	}
	if t := get("continuation-token"); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil || len(b) == 0 {
			return lq, fmt.Errorf("the continuation token %q is not one this endpoint wrote", t)
		}
		lq.After = max(lq.After, string(b))
	}
	if e := get("encoding-type"); e != "" && e != "url" {
		return lq, fmt.Errorf("encoding-type %q: only url is known", e)
	}
	return lq, nil
}

// listResult writes a page as ListObjectsV2's answer, URL-encoded if the request asked.
func listResult(bucket string, q map[string][]string, lq s3serve.ListQuery, page s3serve.Page) s3serve.ListResult {
	enc := func(s string) string { return s }
	encoding := ""
	if first(q, "encoding-type") == "url" {
		enc, encoding = s3serve.URLEncode, "url"
	}
	res := s3serve.ListResult{Name: bucket, Prefix: enc(lq.Prefix), Delimiter: enc(lq.Delimiter), EncodingType: encoding,
		MaxKeys: lq.MaxKeys, ContinuationToken: first(q, "continuation-token"), StartAfter: enc(first(q, "start-after")),
		KeyCount: len(page.Objects) + len(page.Prefixes), IsTruncated: page.Next != ""}
	if page.Next != "" {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(page.Next))
	}
	for _, o := range page.Objects {
		e := s3serve.Listed("", o.Object)
		e.Key = enc(o.Key)
		res.Contents = append(res.Contents, e)
	}
	for _, p := range page.Prefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, s3serve.CommonPrefix{Prefix: enc(p)})
	}
	return res
}

// first is a query parameter's first value, or "".
func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// listBuckets answers ListBuckets with the buckets the namespace reads on this node.
func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request, req request) {
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	var names []string
	for _, ds := range s.Catalog.Served(r.Context(), req.namespace) {
		names = append(names, ds.Bucket)
	}
	slices.Sort(names)
	res := listAllMyBuckets{Owner: bucketOwner{ID: req.namespace, DisplayName: req.namespace}}
	for _, n := range slices.Compact(names) {
		res.Buckets = append(res.Buckets, bucketEntry{Name: n, CreationDate: time.Unix(0, 0).UTC().Format(time.RFC3339)})
	}
	s3serve.WriteXML(w, r, res, s.log())
}

type listAllMyBuckets struct {
	XMLName xml.Name      `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner   bucketOwner   `xml:"Owner"`
	Buckets []bucketEntry `xml:"Buckets>Bucket"`
}

type bucketOwner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type bucketEntry struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}
