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

// Package readers is the node agent's S3 endpoint for the pods of its node: it serves the Datasets
// whose copies the node holds under their buckets' own names and keys, read-only, so that a reader
// changes only its endpoint and keeps every s3:// URL (its own and those inside table metadata).
//
// A namespace reads only its own Datasets: a request's access key names its namespace
// (internal/s3creds), and the endpoint looks keys up among that namespace's Datasets alone. A key no
// Dataset holds is NoSuchKey, never fetched from the bucket behind the reader's back. Each reader
// reads one generation of each Dataset from its first request to its last (Sessions).
package readers

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// Server is the readers' endpoint. Set Catalog, MasterKey and Sessions.
type Server struct {
	Catalog Catalog
	// MasterKey returns the master key of a key generation (internal/s3creds), or an error when this
	// node does not have it (yet).
	MasterKey func(keyGen byte) ([]byte, error)
	// Epochs are the access keys' lifetimes; zero means s3creds.DefaultEpochs.
	Epochs s3creds.Epochs
	// ClientCheck, when set, refuses a client by its address (a pod of another node).
	ClientCheck func(netip.Addr) error
	Sessions    *Sessions
	// Metrics, when set, counts the answers (NewMetrics).
	Metrics *Metrics
	Log     *slog.Logger

	refusals s3serve.RefusalLog
}

// request is one verified request: who sent it, and what it asks for.
type request struct {
	namespace string
	pin       s3creds.Pin
	session   string
	bucket    string
	key       string
}

// ServeHTTP answers one S3 request, and counts it in Metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	namespace := s.serve(rec, r)
	s.Metrics.observe(namespace, operation(r), rec.status, rec.sent, time.Since(start))
}

// serve answers r, and returns the namespace whose key signed it ("" if none did).
func (s *Server) serve(w http.ResponseWriter, r *http.Request) (namespace string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s3serve.WriteError(w, r, http.StatusMethodNotAllowed, "MethodNotAllowed", "pqcache's endpoint for readers is read-only")
		return ""
	}
	req, err := s.authenticate(r)
	if err != nil {
		s.refuse(w, r, err)
		return ""
	}
	s.answer(w, r, req)
	return req.namespace
}

// answer serves a verified request.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req request) {
	if req.bucket == "" {
		s.listBuckets(w, r, req)
		return
	}
	served := inBucket(s.Catalog.Served(r.Context(), req.namespace), req.bucket)
	if len(served) == 0 {
		s.refuse(w, r, s3serve.Refuse("AccessDenied", fmt.Sprintf(
			"namespace %s has no Dataset of bucket %s whose copy is on this node: a Dataset with spec.replicas in namespace %s, on the nodes it names, serves it",
			req.namespace, req.bucket, req.namespace)))
		return
	}
	if req.key == "" {
		s.bucket(w, r, req, served)
		return
	}
	s.object(w, r, req, served)
}

// authenticate checks where r comes from and its signature, and reads what it asks for.
func (s *Server) authenticate(r *http.Request) (request, error) {
	if s.ClientCheck != nil {
		addr, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			return request{}, s3serve.Refuse("AccessDenied", "the client's address is unknown")
		}
		if err := s.ClientCheck(addr.Addr().Unmap()); err != nil {
			return request{}, s3serve.Refuse("AccessDenied", err.Error())
		}
	}
	auth, err := s3serve.Verifier{Lookup: s.lookup}.Verify(r)
	if err != nil {
		return request{}, err
	}
	key, err := s3creds.ParseAccessKeyID(auth.AccessKey)
	if err != nil { // Verify's lookup parsed it already
		return request{}, s3serve.Refuse("InvalidAccessKeyId", err.Error())
	}
	pin, err := s3creds.ParsePin(r.Header.Get("X-Amz-Security-Token"))
	if err != nil {
		return request{}, s3serve.Refuse("AccessDenied", err.Error())
	}
	req := request{namespace: key.Namespace, pin: pin, session: "client/" + clientHost(r.RemoteAddr)}
	if pin.Session != "" {
		req.session = "pin/" + pin.Session
	}
	req.bucket, req.key, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return req, nil
}

// lookup is the Verifier's: the secret of a key this node can derive, in an epoch not over.
func (s *Server) lookup(id string, _ time.Time) (string, error) {
	key, err := s3creds.ParseAccessKeyID(id)
	if err != nil {
		return "", s3serve.Refuse("InvalidAccessKeyId", fmt.Sprintf(
			"the access key was not issued by pqcache: read with the keys of Secret %s in your namespace", s3creds.SecretName))
	}
	if err := s.epochs().Check(key.Epoch, time.Now()); err != nil {
		return "", s3serve.Refuse("AccessDenied", fmt.Sprintf(
			"access key of namespace %s: %v; Secret %s/%s holds the current one (a pod reads its environment when it starts: restart it)",
			key.Namespace, err, key.Namespace, s3creds.SecretName))
	}
	if s.MasterKey == nil {
		return "", s3serve.Refuse("InvalidAccessKeyId", "this node has no key to check access keys with yet")
	}
	master, err := s.MasterKey(key.KeyGen)
	if err != nil {
		return "", s3serve.Refuse("InvalidAccessKeyId", fmt.Sprintf("this node cannot check keys of generation %d yet: %v", key.KeyGen, err))
	}
	return s3creds.Secret(master, id), nil
}

func (s *Server) epochs() s3creds.Epochs {
	if s.Epochs.Length > 0 {
		return s.Epochs
	}
	return s3creds.DefaultEpochs
}

// refuse answers a refusal (a *s3serve.Refusal says how; anything else is a 403 AccessDenied) and
// counts it in the refusal log.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	s.refusals.Refused(s.log(), r, err, "reader requests")
	var refusal *s3serve.Refusal
	if !errors.As(err, &refusal) {
		refusal = s3serve.Refuse("AccessDenied", err.Error())
	}
	s3serve.WriteError(w, r, refusal.Status, refusal.Code, refusal.Message)
}

// object answers GetObject and HeadObject from the session's generation of the key's Dataset.
func (s *Server) object(w http.ResponseWriter, r *http.Request, req request, served []Served) {
	ds, ok := owner(served, req.key)
	if !ok {
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchKey", "no Dataset on this node holds this key; it serves "+prefixes(served))
		return
	}
	held, done, ok := s.acquire(w, r, req, ds)
	if !ok {
		return
	}
	defer done()
	rel := req.key[len(ds.Prefix):]
	obj, found, err := held.Index.Find(rel)
	if err != nil {
		s3serve.WriteError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if !found {
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchKey", fmt.Sprintf(
			"generation %d of Dataset %s holds no such key", held.Lease.Generation, ds.Dataset))
		return
	}
	w.Header().Set(GenerationHeader, ds.Dataset+"="+strconv.FormatInt(held.Lease.Generation, 10))
	s3serve.ServeObject(w, r, held.Lease.Dir, rel, obj, s.log())
}

// GenerationHeader names, in each answer about a Dataset, the Dataset and the generation it came
// from.
const GenerationHeader = "X-Pqcache-Generation"

// acquire holds the session's generation of ds, or answers why it cannot.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request, req request, ds Served) (*Held, func(), bool) {
	pinned := req.pin.Generations[ds.Dataset]
	held, done, err := s.Sessions.Acquire(req.namespace, req.session, ds.Root, ds.Source, pinned)
	switch {
	case err == nil && !held.copiedFrom(ds.Source):
		done()
		status, code, next := http.StatusServiceUnavailable, "SlowDown", "its keys are served once the first generation copied from the new source is on this node"
		if pinned != 0 {
			status, code, next = http.StatusBadRequest, "InvalidRequest", "the pin names a generation of the old source"
		}
		s3serve.WriteError(w, r, status, code, fmt.Sprintf("generation %d of Dataset %s was copied from %s, and the Dataset now reads %s: %s",
			held.Lease.Generation, ds.Dataset, held.Source, ds.Source, next))
	case err == nil:
		return held, done, true
	case errors.Is(err, ErrUnreadable):
		s3serve.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", fmt.Sprintf("the copy of Dataset %s is not readable now: %v", ds.Dataset, err))
	case errors.Is(err, ErrTooManySessions):
		s3serve.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", err.Error())
	case errors.Is(err, fs.ErrNotExist) && req.pin.Generations[ds.Dataset] != 0:
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchKey", fmt.Sprintf(
			"generation %d of Dataset %s is not kept on this node: %v", req.pin.Generations[ds.Dataset], ds.Dataset, err))
	case errors.Is(err, fs.ErrNotExist):
		s3serve.WriteError(w, r, http.StatusServiceUnavailable, "SlowDown", fmt.Sprintf("Dataset %s has no generation on this node yet", ds.Dataset))
	case errors.Is(err, ErrPinConflict):
		s3serve.WriteError(w, r, http.StatusBadRequest, "InvalidRequest", err.Error())
	default:
		s3serve.WriteError(w, r, http.StatusInternalServerError, "InternalError", fmt.Sprintf("holding a generation of Dataset %s: %v", ds.Dataset, err))
	}
	return nil, nil, false
}

// clientHost is the host of a remote address.
func clientHost(remote string) string {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().String()
	}
	return remote
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
