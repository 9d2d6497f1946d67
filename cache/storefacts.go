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

package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pqcache/pqcache/cache/manifest"
)

// What a sync learnt about its store that later syncs of the same source should not learn again,
// kept beside the manifest: whether the store ignores part reads. Some S3-compatible stores (moto's
// server among them) answer GET ?partNumber=N of a multipart object with the whole object, 200, no
// Content-Range and no x-amz-mp-parts-count; a multipart ETag (the MD5 of the parts' MD5s) cannot
// be checked without the parts' bounds, so such objects are fetched whole and checked by their size,
// and counted as unverified.

// storeFactsFile is DIR/.pqcache/store.json.
const storeFactsFile = "store.json"

// storeFacts are the facts learnt of one source.
type storeFacts struct {
	Source            string `json:"source"`
	IgnoresPartNumber bool   `json:"ignoresPartNumber,omitempty"`
}

// errPartsIgnored: a part GET came back as the whole object.
var errPartsIgnored = errors.New("the store ignores part reads (GET ?partNumber=N answered with the whole object)")

// partsIgnoredWarning says why files were checked by size alone.
const partsIgnoredWarning = "the store ignores part reads (GET ?partNumber=N answers with the whole object), so multipart objects " +
	"without a full-object checksum were fetched whole and checked by their size only (filesUnverified); a store that keeps " +
	"full-object checksums (x-amz-checksum-*, S3's default for new uploads) or answers part reads lets pqcache check every byte"

// loadStoreFacts reads what earlier syncs of source learnt: nothing for another source.
func loadStoreFacts(root, source string) storeFacts {
	data, err := os.ReadFile(filepath.Join(root, manifest.Dir, storeFactsFile))
	var f storeFacts
	if err != nil || json.Unmarshal(data, &f) != nil || f.Source != source {
		return storeFacts{Source: source}
	}
	return f
}

// save writes the facts atomically (a rename); a fact that cannot be kept is learnt again next time.
func (f storeFacts) save(root string) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, manifest.Dir)
	tmp := filepath.Join(dir, storeFactsFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("keeping what the store does: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, storeFactsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keeping what the store does: %w", err)
	}
	return nil
}
