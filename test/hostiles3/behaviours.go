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
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// Behaviour is one way to break the protocol.
type Behaviour string

// The behaviours. Each applies to the requests its Rule's Op selects; where one means nothing for a
// kind of request (a wrong checksum for a listing), that request is answered well.
const (
	// Good answers as S3 does.
	Good Behaviour = ""
	// EndlessBody sends an answer's start and then whitespace without end (up to EndlessLimit), with
	// no Content-Length: a listing that reads its body whole grows without bound.
	EndlessBody Behaviour = "endless-body"
	// HugeDocument sends a listing page of HugeBytes, declared in its Content-Length: the real page
	// with a run of padding elements before its end.
	HugeDocument Behaviour = "huge-document"
	// SlowHeaders never answers: it holds the request, with no status line, until the client goes.
	SlowHeaders Behaviour = "slow-headers"
	// SlowBody sends the good answer's headers and then its body one byte every Interval.
	SlowBody Behaviour = "slow-body"
	// ShortLength declares a Content-Length half the body's and sends the whole body.
	ShortLength Behaviour = "short-length"
	// LongLength declares a Content-Length longer than the body, sends the body and closes.
	LongLength Behaviour = "long-length"
	// Truncated declares the right Content-Length and closes the connection halfway through the body.
	Truncated Behaviour = "truncated"
	// RedirectLoop answers 307 to the same URL, for ever.
	RedirectLoop Behaviour = "redirect-loop"
	// RedirectAway answers 307 to the same path on another host name (localhost instead of
	// 127.0.0.1, so that a client that follows is counted in Stats.Away).
	RedirectAway Behaviour = "redirect-away"
	// Storm500 answers 500 InternalError to everything.
	Storm500 Behaviour = "500-storm"
	// Storm503 answers 503 SlowDown to everything.
	Storm503 Behaviour = "503-storm"
	// WrongChecksum sends a GET body of the right length whose bytes differ from the object's, under
	// the object's ETag: the body does not match what the listing said.
	WrongChecksum Behaviour = "wrong-checksum"
	// RepeatToken sends the real first page, says more follow, and gives the same continuation token
	// on every page: followed, the listing never ends.
	RepeatToken Behaviour = "repeat-token"
	// EndlessPages sends empty pages that say more follow, each with a new token, without end.
	EndlessPages Behaviour = "endless-pages"
	// NegativeSize adds an object listed with a negative size at the end of each page.
	NegativeSize Behaviour = "negative-size"
	// OutsidePrefix adds an object whose key is outside the listed prefix at the start of each page.
	OutsidePrefix Behaviour = "outside-prefix"
)

// Behaviours lists every bad behaviour.
var Behaviours = []Behaviour{EndlessBody, HugeDocument, SlowHeaders, SlowBody, ShortLength, LongLength, Truncated,
	RedirectLoop, RedirectAway, Storm500, Storm503, WrongChecksum, RepeatToken, EndlessPages, NegativeSize, OutsidePrefix}

// The keys NegativeSize and OutsidePrefix add, relative to the listed prefix and whole.
const (
	NegativeKey = "zzzz-negative.bin"
	OutsideKey  = "zz-outside/escape.bin"
)

// misbehave answers r by b.
func (s *Server) misbehave(w http.ResponseWriter, r *http.Request, b Behaviour, bucket, key string, op Op) {
	switch b {
	case SlowHeaders:
		s.hold(r.Context(), s.MaxHold)
	case RedirectLoop:
		w.Header().Set("Location", r.URL.String())
		w.WriteHeader(http.StatusTemporaryRedirect)
	case RedirectAway:
		_, port, _ := strings.Cut(r.Host, ":")
		w.Header().Set("Location", "http://localhost:"+port+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	case Storm500:
		s3Error(w, http.StatusInternalServerError, "InternalError", "we encountered an internal error, please try again")
	case Storm503:
		s3Error(w, http.StatusServiceUnavailable, "SlowDown", "please reduce your request rate")
	case EndlessBody:
		s.endless(w, r, op)
	case HugeDocument, RepeatToken, EndlessPages, NegativeSize, OutsidePrefix:
		if op != OpList {
			s.serveGood(w, r, bucket, key, op)
			return
		}
		s.badListing(w, r, b, bucket)
	case WrongChecksum:
		o, ok := s.object(bucket, key)
		if op != OpGet || !ok {
			s.serveGood(w, r, bucket, key, op)
			return
		}
		flipped := bytes.Clone(o.data)
		for i := range flipped {
			flipped[i] ^= 0xff
		}
		serveObject(w, r, o, flipped)
	default: // the answers with a broken body
		s.brokenBody(w, r, b, bucket, key, op)
	}
}

// badListing answers a ListObjectsV2 with a page broken by b.
func (s *Server) badListing(w http.ResponseWriter, r *http.Request, b Behaviour, bucket string) {
	q := r.URL.Query()
	if b == RepeatToken || b == EndlessPages {
		q.Del("continuation-token") // its own tokens: the first page again, or an empty one
	}
	res, err := s.page(bucket, q)
	if err != nil {
		s3Error(w, http.StatusNotFound, "NoSuchBucket", err.Error())
		return
	}
	switch b {
	case RepeatToken:
		res.IsTruncated, res.NextContinuationToken = true, "again"
	case EndlessPages:
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("continuation-token"), "empty-"))
		res.Contents, res.KeyCount = nil, 0
		res.IsTruncated, res.NextContinuationToken = true, fmt.Sprintf("empty-%d", n+1)
	case NegativeSize:
		res.Contents = append(res.Contents, entry{Key: res.Prefix + NegativeKey, LastModified: timestamp(),
			ETag: `"0123456789abcdef0123456789abcdef"`, Size: -5, StorageClass: "STANDARD"})
	case OutsidePrefix:
		res.Contents = append([]entry{{Key: OutsideKey, LastModified: timestamp(),
			ETag: `"0123456789abcdef0123456789abcdef"`, Size: 7, StorageClass: "STANDARD"}}, res.Contents...)
	case HugeDocument:
		s.huge(w, encode(res))
		return
	}
	res.KeyCount = len(res.Contents)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write(encode(res))
}

// padding is what endless and huge bodies are made of.
var padding = []byte(strings.Repeat("<Pad>"+strings.Repeat("x", 1013)+"</Pad>", 64)) // 64 KiB

// huge sends doc with HugeBytes of padding elements before its closing tag, in a declared length.
func (s *Server) huge(w http.ResponseWriter, doc []byte) {
	end := bytes.LastIndex(doc, []byte("</ListBucketResult>"))
	pad := s.HugeBytes - int64(len(doc))
	pad -= pad % int64(len(padding))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.FormatInt(int64(len(doc))+max(pad, 0), 10))
	if s.write(w, doc[:end]) != nil {
		return
	}
	for ; pad > 0; pad -= int64(len(padding)) {
		if s.write(w, padding) != nil {
			return
		}
	}
	_ = s.write(w, doc[end:])
}

// endless sends the start of an answer, then whitespace up to EndlessLimit, then a valid end: a
// client that reads it all sees an empty listing (or an object of EndlessLimit bytes).
func (s *Server) endless(w http.ResponseWriter, r *http.Request, op Op) {
	start, end := "", ""
	if op == OpList {
		start = xmlHeaderAndStart(r.URL.Query().Get("prefix")) + "<IsTruncated>false</IsTruncated>"
		end = "</ListBucketResult>"
	}
	w.Header().Set("Content-Type", "application/xml")
	if s.write(w, []byte(start)) != nil {
		return
	}
	pad := bytes.Repeat([]byte(" "), 64<<10)
	for sent := int64(0); sent < s.EndlessLimit; sent += int64(len(pad)) {
		if s.write(w, pad) != nil {
			return // the client stopped reading, or the server closed
		}
	}
	_ = s.write(w, []byte(end))
}

func xmlHeaderAndStart(prefix string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>data</Name><Prefix>` + xmlText(prefix) + `</Prefix><MaxKeys>1000</MaxKeys>`
}

// write sends b, counted, unless the server closed.
func (s *Server) write(w http.ResponseWriter, b []byte) error {
	select {
	case <-s.done:
		return errClosed
	default:
	}
	n, err := w.Write(b)
	s.Stats.BodyBytes.Add(int64(n))
	return err
}

// brokenBody sends the good answer to r with its body broken by b, on the raw connection: net/http
// would not send a Content-Length that differs from the body.
func (s *Server) brokenBody(w http.ResponseWriter, r *http.Request, b Behaviour, bucket, key string, op Op) {
	rec := httptest.NewRecorder()
	s.serveGood(rec, r, bucket, key, op)
	res := rec.Result()
	body := rec.Body.Bytes()
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer func() { _ = conn.Close() }()
	length, send := int64(len(body)), body
	switch b {
	case ShortLength:
		length = int64(len(body) / 2)
	case LongLength:
		length = int64(len(body)) + 1000
	case Truncated:
		send = body[:len(body)/2]
	}
	res.Header.Set("Content-Length", strconv.FormatInt(length, 10))
	res.Header.Set("Connection", "close")
	if err := writeHead(buf, res.StatusCode, res.Header); err != nil {
		return
	}
	if b == SlowBody {
		s.dribble(r, conn, buf, send)
		return
	}
	n, _ := buf.Write(send)
	s.Stats.BodyBytes.Add(int64(n))
	_ = buf.Flush()
}

func writeHead(buf *bufio.ReadWriter, status int, h http.Header) error {
	if _, err := fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status)); err != nil {
		return err
	}
	if err := h.Write(buf); err != nil {
		return err
	}
	if _, err := buf.WriteString("\r\n"); err != nil {
		return err
	}
	return buf.Flush()
}

// dribble sends body one byte every Interval, until the client or the server goes.
func (s *Server) dribble(r *http.Request, conn interface{ Write([]byte) (int, error) }, buf *bufio.ReadWriter, body []byte) {
	_ = buf.Flush()
	for i := range body {
		if !s.hold(r.Context(), s.Interval) {
			return
		}
		if _, err := conn.Write(body[i : i+1]); err != nil {
			return
		}
		s.Stats.BodyBytes.Add(1)
	}
}
