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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/cache/generations"
)

// Span is the bytes [Start, Start+Length) of an object that a response carries.
type Span struct {
	Start, Length int64
	Ranged        bool // a Range or partNumber request: 206 with Content-Range
}

// ServeObject answers GetObject or HeadObject for obj, whose bytes are the file at key inside dir
// (a generation's tree, held by the caller): If-Match, a Range or partNumber, the headers a store
// sends, and the body.
func ServeObject(w http.ResponseWriter, r *http.Request, dir, key string, obj generations.Object, log *slog.Logger) {
	if m := r.Header.Get("If-Match"); m != "" && m != obj.ETag && m != "*" {
		WriteError(w, r, http.StatusPreconditionFailed, "PreconditionFailed", "the ETag does not match")
		return
	}
	sp, err := RequestedSpan(r, obj)
	if err != nil {
		WriteError(w, r, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", err.Error())
		return
	}
	// The key is in the generation's manifest, whose keys are checked (plan.ValidateKey); opening it
	// inside the generation's tree makes sure a request can never read outside it all the same.
	f, err := os.OpenInRoot(dir, filepath.FromSlash(key))
	if err != nil {
		WriteError(w, r, http.StatusInternalServerError, "InternalError", fmt.Sprintf("opening %s: %v", key, err))
		return
	}
	defer func() { _ = f.Close() }() // only read
	WriteHeaders(w, r, obj, sp)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := f.Seek(sp.Start, io.SeekStart); err == nil {
		_, err = io.Copy(w, io.LimitReader(f, sp.Length)) // sendfile to a plain connection
		if err != nil && log != nil {
			log.Debug("Object not sent whole", "key", key, "remote", r.RemoteAddr, "error", err)
		}
	}
}

// RequestedSpan reads a Range header or a partNumber parameter.
func RequestedSpan(r *http.Request, obj generations.Object) (Span, error) {
	if pn := r.URL.Query().Get("partNumber"); pn != "" {
		n, err := strconv.Atoi(pn)
		if err != nil || n < 1 {
			return Span{}, fmt.Errorf("bad partNumber %q", pn)
		}
		if len(obj.Parts) == 0 {
			if n == 1 { // an object uploaded in one part is its own part 1
				return Span{Length: obj.Size, Ranged: true}, nil
			}
			return Span{}, errors.New("this copy does not know the object's upload parts")
		}
		if n > len(obj.Parts) {
			return Span{}, fmt.Errorf("the object has %d parts", len(obj.Parts))
		}
		var start int64
		for _, p := range obj.Parts[:n-1] {
			start += p
		}
		return Span{Start: start, Length: obj.Parts[n-1], Ranged: true}, nil
	}
	h := r.Header.Get("Range")
	if h == "" {
		return Span{Length: obj.Size}, nil
	}
	return ParseRange(h, obj.Size)
}

// ParseRange reads a single byte range: "bytes=START-END", "bytes=START-" (the forms the sync engine
// sends) or "bytes=-N", the last N bytes (how some Parquet readers fetch a footer first).
func ParseRange(h string, size int64) (Span, error) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	from, to, dash := strings.Cut(spec, "-")
	if ok && dash && from == "" {
		n, err := strconv.ParseInt(to, 10, 64)
		if err != nil || n <= 0 || size == 0 {
			return Span{}, fmt.Errorf("range %q of an object of %d bytes", h, size)
		}
		n = min(n, size)
		return Span{Start: size - n, Length: n, Ranged: true}, nil
	}
	start, err := strconv.ParseInt(from, 10, 64)
	if !ok || !dash || err != nil || start < 0 || start >= size {
		return Span{}, fmt.Errorf("range %q of an object of %d bytes", h, size)
	}
	end := size - 1
	if to != "" {
		if end, err = strconv.ParseInt(to, 10, 64); err != nil || end < start {
			return Span{}, fmt.Errorf("range %q", h)
		}
		end = min(end, size-1)
	}
	return Span{Start: start, Length: end - start + 1, Ranged: true}, nil
}

// WriteHeaders writes what a store answers about the object, and the status.
func WriteHeaders(w http.ResponseWriter, r *http.Request, obj generations.Object, sp Span) {
	h := w.Header()
	h.Set("ETag", obj.ETag)
	h.Set("Last-Modified", obj.LastModified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(sp.Length, 10))
	if len(obj.Parts) > 0 && r.URL.Query().Get("partNumber") != "" {
		h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(obj.Parts)))
	}
	if alg, value, ok := strings.Cut(obj.Checksum, ":"); ok && !sp.Ranged && strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		h.Set("X-Amz-Checksum-"+alg, value)
		h.Set("X-Amz-Checksum-Type", "FULL_OBJECT")
	}
	if !sp.Ranged {
		w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", sp.Start, sp.Start+sp.Length-1, obj.Size))
	w.WriteHeader(http.StatusPartialContent)
}

// WriteError writes an S3 error document (none for HEAD, as S3 does).
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
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
