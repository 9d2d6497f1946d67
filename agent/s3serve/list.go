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
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/pqcache/pqcache/cache/generations"
)

// MaxKeys is the most keys a listing page holds, as in S3.
const MaxKeys = 1000

// ListResult is a ListObjectsV2 response.
type ListResult struct {
	XMLName               xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	KeyCount              int            `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	IsTruncated           bool           `xml:"IsTruncated"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	Contents              []ListedEntry  `xml:"Contents"`
	CommonPrefixes        []CommonPrefix `xml:"CommonPrefixes"`
}

// ListedEntry is one object in a listing.
type ListedEntry struct {
	Key               string `xml:"Key"`
	LastModified      string `xml:"LastModified"`
	ETag              string `xml:"ETag"`
	Size              int64  `xml:"Size"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	StorageClass      string `xml:"StorageClass"`
}

// CommonPrefix is a "directory" a listing with a delimiter rolls keys up into.
type CommonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// Listed is how o appears in a listing, under the name keyPrefix + o.Key.
func Listed(keyPrefix string, o generations.Object) ListedEntry {
	e := ListedEntry{Key: keyPrefix + o.Key, LastModified: o.LastModified.UTC().Format(time.RFC3339Nano), ETag: o.ETag, Size: o.Size,
		StorageClass: "STANDARD"}
	if alg, _, ok := strings.Cut(o.Checksum, ":"); ok {
		e.ChecksumAlgorithm, e.ChecksumType = alg, "FULL_OBJECT"
	}
	return e
}

// WriteXML sends v as an XML document with status 200; a client gone meanwhile is logged at debug.
func WriteXML(w http.ResponseWriter, r *http.Request, v any, log *slog.Logger) {
	w.Header().Set("Content-Type", "application/xml")
	_, err := io.WriteString(w, xml.Header)
	if err == nil {
		err = xml.NewEncoder(w).Encode(v)
	}
	if err != nil && log != nil {
		log.Debug("Response not sent", "remote", r.RemoteAddr, "error", err)
	}
}
