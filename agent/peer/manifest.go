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
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// digester computes a manifest's digest line by line: SHA-256 over each object's canonical JSON (as
// generations.Publish writes it) and a newline, in strict key order. Objects are decoded and encoded
// again, so that two encodings of the same manifest (spacing, escapes) have one digest.
type digester struct {
	h    hashWriter
	prev string
	n    int64
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func newDigester() *digester { return &digester{h: sha256.New()} }

// add takes one line of a manifest and returns the object and its canonical line.
func (d *digester) add(line []byte) (generations.Object, []byte, error) {
	o, err := generations.ParseObject(line)
	if err != nil {
		return o, nil, err
	}
	if d.n > 0 && o.Key <= d.prev {
		return o, nil, fmt.Errorf("manifest line %d: key %q after %q: not in strict key order", d.n+1, o.Key, d.prev)
	}
	canon, err := json.Marshal(o)
	if err != nil {
		return o, nil, fmt.Errorf("encoding manifest line %d: %w", d.n+1, err)
	}
	canon = append(canon, '\n')
	_, _ = d.h.Write(canon) // a hash never fails a write
	d.prev, d.n = o.Key, d.n+1
	return o, canon, nil
}

func (d *digester) sum() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }

// scanManifest calls fn with each line of the manifest in r, bounded by generations.MaxIndexLine.
func scanManifest(r io.Reader, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), generations.MaxIndexLine)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ManifestDigest is the digest of generation g's manifest under root: what the seed publishes in
// its DatasetReplica's status. It reads the manifest once, line by line.
func ManifestDigest(root string, g int64) (string, error) {
	f, err := generations.OpenObjects(root, g)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // only read
	d := newDigester()
	err = scanManifest(bufio.NewReaderSize(f, 1<<16), func(line []byte) error {
		_, _, err := d.add(line)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("the manifest of generation %d: %w", g, err)
	}
	return d.sum(), nil
}

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
	defer idx.close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.FormatInt(idx.size, 10))
	w.Header().Set("ETag", `"`+strconv.FormatInt(idx.modTime.UnixNano(), 16)+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return true
	}
	if _, err := io.Copy(w, io.NewSectionReader(idx.f, 0, idx.size)); err != nil {
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
