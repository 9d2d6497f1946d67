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

// Package mountapi is the narrow protocol between the node agent's two containers: the privileged
// one that mounts (the CSI node plugin) and the unprivileged one that syncs, serves peers and reads
// S3. The mount side asks only what publishing a volume needs ("where is this node's copy of Dataset
// X, if it keeps one?") and reports which copies published volumes still show, so that the agent
// never prunes them. The agent answers a directory under the cache root, which the mount side
// confines itself (agent/csi) before it holds or mounts anything: the answer is as hostile as
// anything else the unprivileged side could send.
//
// A connection carries one request and one response, each a 4-byte big-endian length and a JSON
// body. Lengths are capped before anything is read, and both ends set deadlines, so a stuck or
// hostile peer costs a connection and a few seconds, never the other container.
package mountapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Caps on what either side reads. A request may list every copy that published volumes show; a
// response is a directory and a sentence for the pod's events.
const (
	MaxRequestBytes  = 1 << 20
	MaxResponseBytes = 8 << 10
	// MaxDirs bounds an in-use report: far more copies than a node keeps.
	MaxDirs = 4096
	// MaxMessage bounds a refusal's or holders' text, which kubelet shows on the pod.
	MaxMessage = 2048
	maxPath    = 4096
)

// Operations a request names.
const (
	// OpLocate asks for this node's copy of a Dataset.
	OpLocate = "locate"
	// OpInUse reports the copies that published volumes show.
	OpInUse = "inUse"
)

// ErrTooLarge is returned for a message whose length exceeds the cap.
var ErrTooLarge = errors.New("message exceeds the cap")

// Request is what the mount side asks.
type Request struct {
	Op string `json:"op"`
	// Namespace and Dataset name the Dataset (OpLocate); Generation is the one asked for, 0 for
	// the current one.
	Namespace  string `json:"namespace,omitempty"`
	Dataset    string `json:"dataset,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Dirs are the copies' directories that published volumes show (OpInUse).
	Dirs []string `json:"dirs,omitempty"`
}

// Response is the agent's answer. Code is a gRPC status code: 0 with Dir set, or a refusal whose
// Message kubelet shows on the pod as it would the in-process driver's.
type Response struct {
	// Dir is the copy's directory under the cache root (OpLocate).
	Dir string `json:"dir,omitempty"`
	// Holders names the nodes with a ready copy, for a refusal the mount side makes itself (no
	// generation to hold yet).
	Holders string `json:"holders,omitempty"`
	Code    uint32 `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Validate checks a request's fields: known op, DNS names, a sane generation, bounded paths.
func (r *Request) Validate() error {
	switch r.Op {
	case OpLocate:
		if !dnsName(r.Namespace, 63) || strings.Contains(r.Namespace, ".") || !dnsName(r.Dataset, 253) {
			return fmt.Errorf("locate: namespace %.64q and dataset %.64q must be DNS names", r.Namespace, r.Dataset)
		}
		if r.Generation < 0 || len(r.Dirs) != 0 {
			return errors.New("locate: a generation is 0 or positive, and no dirs are sent")
		}
	case OpInUse:
		if r.Namespace != "" || r.Dataset != "" || r.Generation != 0 || len(r.Dirs) > MaxDirs {
			return fmt.Errorf("inUse: only dirs, at most %d", MaxDirs)
		}
		for _, d := range r.Dirs {
			if !cleanAbs(d) {
				return fmt.Errorf("inUse: %.64q is not a clean absolute path", d)
			}
		}
	default:
		return fmt.Errorf("unknown op %.32q", r.Op)
	}
	return nil
}

// Validate checks a response's shape: a clean absolute directory (none for an acknowledged report),
// or a refusal with a message.
// Where the directory lies is the mount side's check (agent/csi), against its own cache root.
func (r *Response) Validate() error {
	if len(r.Message) > MaxMessage || len(r.Holders) > MaxMessage || !utf8.ValidString(r.Message) || !utf8.ValidString(r.Holders) {
		return errors.New("message or holders too long, or not UTF-8")
	}
	if r.Code > 16 {
		return fmt.Errorf("code %d is not a gRPC code", r.Code)
	}
	if r.Code != 0 {
		if r.Dir != "" || r.Message == "" {
			return errors.New("a refusal carries a message and no directory")
		}
		return nil
	}
	if r.Dir != "" && !cleanAbs(r.Dir) {
		return fmt.Errorf("directory %.64q is not a clean absolute path", r.Dir)
	}
	return nil
}

// DecodeRequest parses and validates one request body.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if err := decodeStrict(b, &r); err != nil {
		return r, fmt.Errorf("decoding a request: %w", err)
	}
	return r, r.Validate()
}

// DecodeResponse parses and validates one response body.
func DecodeResponse(b []byte) (Response, error) {
	var r Response
	if err := decodeStrict(b, &r); err != nil {
		return r, fmt.Errorf("decoding a response: %w", err)
	}
	return r, r.Validate()
}

// decodeStrict accepts exactly one JSON object with known fields and nothing after it.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the message")
	}
	return nil
}

// WriteMessage writes v framed; a body over limit is not sent.
func WriteMessage(w io.Writer, v any, limit int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > limit {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(b), limit)
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(frame, b...))
	return err
}

// ReadMessage reads one framed body, refusing a length over limit before reading it.
func ReadMessage(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("reading a message's length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading a message: %w", err)
	}
	return b, nil
}

// dnsName accepts lowercase DNS names (RFC 1123 subdomains) up to max characters: what Kubernetes
// admits for namespaces (labels) and Dataset names.
func dnsName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

// cleanAbs accepts an absolute path that filepath.Clean leaves as it is, without NUL.
func cleanAbs(p string) bool {
	return p != "" && len(p) <= maxPath && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// Clip shortens s to at most MaxMessage bytes of valid UTF-8, marking the cut: a refusal naming a
// hundred nodes still reaches the pod's events, shortened.
func Clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage - len(" ...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " ..."
}
