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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
)

// A generation's manifest is its object index (generations.IndexPath): every key with its size,
// LastModified, ETag, checksum and upload parts, one JSON object per line in key order. The seed's
// agent publishes the digest of its current generation's manifest in its own DatasetReplica's status,
// which the API server lets only the seed's node write; a follower fetches the manifest from its peer
// (ManifestKey), accepts it only when its digest is the seed's, and then checks the peer's listing and
// answers against it (VerifiedStore). A peer can then serve nothing that the bucket did not give the
// seed.

// manifestName is the key, inside a generation, under which a peer serves the generation's
// manifest. Keys under manifest.Dir are reserved (no object publishes into it), so it never names an
// object of the Dataset.
const manifestName = manifest.Dir + "/objects"

// ManifestKey is the key under which a peer serves generation g's manifest.
func ManifestKey(g int64) string { return Prefix(g) + manifestName }

// ErrManifestMismatch says a peer served a manifest whose digest is not the seed's, or a listing or
// object metadata that the seed's manifest does not hold: nothing it serves is taken.
var ErrManifestMismatch = errors.New("the peer's copy differs from the manifest the seed published")

// ManifestDigest is the digest of generation g's manifest under root, what the seed publishes in its
// DatasetReplica's status: "sha256:" and the hex SHA-256 of the object index's bytes, exactly as
// generations.Publish wrote them (one JSON object per line, in key order). Every agent writes an index
// with the same encoder, so a follower that holds the generation serves the same bytes; a manifest
// with the same meaning in other bytes is refused, never taken.
func ManifestDigest(root string, g int64) (string, error) {
	f, err := generations.OpenObjects(root, g)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // only read
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the manifest of generation %d: %w", g, err)
	}
	return digestOf(h), nil
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// serveManifest answers GET <generation>/.pqcache/objects with the generation's manifest, held
// while it is sent. It says whether name was a manifest request.
func (s *Server) serveManifest(w http.ResponseWriter, r *http.Request, root, name string) bool {
	g, rest, ok := splitGeneration(name)
	if !ok || rest != manifestName {
		return false
	}
	lease, idx, ok := s.hold(w, r, root, g)
	if !ok {
		return true
	}
	defer lease.Release()
	defer idx.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.FormatInt(idx.Size(), 10))
	w.Header().Set("ETag", `"`+strconv.FormatInt(idx.ModTime().UnixNano(), 16)+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return true
	}
	if _, err := io.Copy(w, idx.Contents()); err != nil {
		s.log().Debug("Manifest not sent whole", "generation", g, "remote", r.RemoteAddr, "error", err)
	}
	return true
}

// keepOpen is the file a verified manifest is kept in while a sync checks against it: unlinked at
// once, so that nothing is left behind whatever happens to the process.
func keepOpen(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".peer-manifest-*")
	if err != nil {
		return nil, fmt.Errorf("creating a file for the peer's manifest: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close() // the removal's error is the one to report
		return nil, fmt.Errorf("unlinking %s: %w", f.Name(), err)
	}
	return f, nil
}
