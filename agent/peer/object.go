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
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/cache/generations"
)

// span is the bytes [start, start+length) of an object that a response carries.
type span struct {
	start, length int64
	ranged        bool // a Range or partNumber request: 206 with Content-Range
}

// object answers GetObject and HeadObject for "<generation>/<key>".
func (s *Server) object(w http.ResponseWriter, r *http.Request, root, name string) {
	g, key, ok := splitGeneration(name)
	if !ok || key == "" {
		writeError(w, r, http.StatusNotFound, "NoSuchKey", "keys are <generation>/<key>")
		return
	}
	lease, idx, ok := s.hold(w, r, root, g)
	if !ok {
		return
	}
	defer lease.Release()
	obj, ok, err := idx.find(key)
	idx.close()
	if err != nil {
		writeError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if !ok {
		writeError(w, r, http.StatusNotFound, "NoSuchKey", "no such key in generation "+strconv.FormatInt(g, 10))
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != obj.ETag && m != "*" {
		writeError(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "the ETag does not match")
		return
	}
	sp, err := requestedSpan(r, obj)
	if err != nil {
		writeError(w, r, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", err.Error())
		return
	}
	// The key is in the generation's manifest, whose keys are checked (plan.ValidateKey); opening it
	// inside the generation's tree makes sure a request can never read outside it all the same.
	f, err := os.OpenInRoot(lease.Dir, filepath.FromSlash(key))
	if err != nil {
		writeError(w, r, http.StatusInternalServerError, "InternalError", fmt.Sprintf("opening %s: %v", key, err))
		return
	}
	defer func() { _ = f.Close() }() // only read
	writeHeaders(w, r, obj, sp)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := f.Seek(sp.start, io.SeekStart); err == nil {
		_, err = io.Copy(w, io.LimitReader(f, sp.length)) // sendfile to the connection
		if err != nil {
			s.log().Debug("Object not sent whole", "key", key, "remote", r.RemoteAddr, "error", err)
		}
	}
}

// requestedSpan reads a Range header or a partNumber parameter.
func requestedSpan(r *http.Request, obj generations.Object) (span, error) {
	if pn := r.URL.Query().Get("partNumber"); pn != "" {
		n, err := strconv.Atoi(pn)
		if err != nil || n < 1 {
			return span{}, fmt.Errorf("bad partNumber %q", pn)
		}
		if len(obj.Parts) == 0 {
			if n == 1 { // an object uploaded in one part is its own part 1
				return span{length: obj.Size, ranged: true}, nil
			}
			return span{}, errors.New("this copy does not know the object's upload parts")
		}
		if n > len(obj.Parts) {
			return span{}, fmt.Errorf("the object has %d parts", len(obj.Parts))
		}
		var start int64
		for _, p := range obj.Parts[:n-1] {
			start += p
		}
		return span{start: start, length: obj.Parts[n-1], ranged: true}, nil
	}
	h := r.Header.Get("Range")
	if h == "" {
		return span{length: obj.Size}, nil
	}
	return parseRange(h, obj.Size)
}

// parseRange reads "bytes=START-END" or "bytes=START-", the forms the sync engine sends.
func parseRange(h string, size int64) (span, error) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	from, to, dash := strings.Cut(spec, "-")
	start, err := strconv.ParseInt(from, 10, 64)
	if !ok || !dash || err != nil || start < 0 || start >= size {
		return span{}, fmt.Errorf("range %q of an object of %d bytes", h, size)
	}
	end := size - 1
	if to != "" {
		if end, err = strconv.ParseInt(to, 10, 64); err != nil || end < start {
			return span{}, fmt.Errorf("range %q", h)
		}
		end = min(end, size-1)
	}
	return span{start: start, length: end - start + 1, ranged: true}, nil
}

// writeHeaders writes what a store answers about the object, and the status.
func writeHeaders(w http.ResponseWriter, r *http.Request, obj generations.Object, sp span) {
	h := w.Header()
	h.Set("ETag", obj.ETag)
	h.Set("Last-Modified", obj.LastModified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(sp.length, 10))
	if len(obj.Parts) > 0 && r.URL.Query().Get("partNumber") != "" {
		h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(obj.Parts)))
	}
	if alg, value, ok := strings.Cut(obj.Checksum, ":"); ok && !sp.ranged && strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		h.Set("X-Amz-Checksum-"+alg, value)
		h.Set("X-Amz-Checksum-Type", "FULL_OBJECT")
	}
	if !sp.ranged {
		w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", sp.start, sp.start+sp.length-1, obj.Size))
	w.WriteHeader(http.StatusPartialContent)
}

// writeError writes an S3 error document (none for HEAD, as S3 does).
func writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("X-Amz-Error-Code", code)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	var msg strings.Builder
	_ = xml.EscapeText(&msg, []byte(message)) // a strings.Builder never fails a write
	fmt.Fprintf(w, "%s<Error><Code>%s</Code><Message>%s</Message></Error>", xml.Header, code, msg.String())
}
