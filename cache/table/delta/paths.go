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

package delta

import (
	"fmt"
	"net/url"
	"strings"

	cacheplan "github.com/pqcache/pqcache/cache/plan"
)

// dataKey turns an add or remove path from the log into an object key relative to the table root.
//
// The log stores an RFC 2396 URI, so it is decoded once (delta-rs writes a Hive-escaped partition
// directory "a%20b" as "a%2520b"). An absolute URI or rooted path is unsupported: we do not know
// the bucket or root here, so we cannot tell whether it lies inside the table. What remains must
// be a clean relative key that stays inside the table and outside _delta_log/, so a hostile log
// can neither reach other objects nor pull in log entries of newer versions.
func dataKey(raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("%w: empty path", ErrCorruptLog)
	}
	if isAbsolute(raw) {
		return "", fmt.Errorf("%w: absolute path %q (only paths relative to the table root are supported)",
			ErrUnsupported, raw)
	}
	key, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("%w: path %q: %w", ErrCorruptLog, raw, err)
	}
	if err := checkRelativeKey(key); err != nil {
		// Its text only: the key's own class would make the error two kinds at once.
		return "", fmt.Errorf("%w: path %q is not a clean key inside the table: %s", ErrCorruptLog, raw, err.Error())
	}
	return key, nil
}

// isAbsolute reports whether a URI reference has a scheme ("s3://b/k", "file:/k") or is rooted.
func isAbsolute(raw string) bool {
	if strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, `\`) {
		return true
	}
	colon := strings.IndexByte(raw, ':')
	return colon > 0 && !strings.ContainsRune(raw[:colon], '/')
}

// checkRelativeKey says why key is not a clean key inside the table for a data file, or nil: a key
// a sync would publish (cacheplan.ValidateKey, the same rules as for every listed object) and that is not
// in the log's folder.
func checkRelativeKey(key string) error {
	if err := cacheplan.ValidateKey(key); err != nil {
		return err
	}
	if key == strings.TrimSuffix(LogDir, "/") || strings.HasPrefix(key, LogDir) {
		return fmt.Errorf("inside %s", LogDir)
	}
	return nil
}
