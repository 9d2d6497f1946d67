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

package wire

import "strconv"

// Size is a number of bytes in the worker's arguments: typed, so that a Dataset's sizes reach a sync
// as numbers, whether through a Job's command line (written and read as quantities, "16Mi") or in a
// node agent's process (no string at all).
type Size int64

// String writes the size as a quantity the flag reads back: with the largest binary suffix that
// divides it exactly ("16Mi", "1536Ki"), else in bytes.
func (s Size) String() string {
	n := int64(s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// VerifyMode is how a sync checks each file before it publishes it.
type VerifyMode string

// The verify modes.
const (
	// VerifyChecksum checks against what the store vouches for (its checksum, a single-part ETag's
	// MD5); the manifest keeps the store's checksum, else a SHA-256.
	VerifyChecksum VerifyMode = "checksum"
	// VerifySHA256 does the same and also keeps a SHA-256 of every file in the manifest.
	VerifySHA256 VerifyMode = "sha256"
	// VerifySize checks sizes only: one GET or ranges per file, no part reads.
	VerifySize VerifyMode = "size"
)

// Valid says whether m is one of the modes.
func (m VerifyMode) Valid() bool {
	return m == VerifyChecksum || m == VerifySHA256 || m == VerifySize
}
