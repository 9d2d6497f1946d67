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

import "fmt"

// maxReaderVersion is the newest reader protocol version we read; version 3 lists reader features.
const maxReaderVersion = 3

// supportedReaderFeatures are the reader features whose tables we can copy faithfully. Most
// features only change how an engine reads rows; what matters here is whether the feature changes
// which objects a reader opens. deletionVectors adds DV files (which we resolve); v2Checkpoint
// (sidecars, UUID-named checkpoints) and catalogManaged (commits held by a catalog) are not
// implemented, so they and any feature we do not know are refused rather than copied incompletely.
var supportedReaderFeatures = map[string]bool{
	"columnMapping":       true,
	"deletionVectors":     true,
	"timestampNtz":        true,
	"typeWidening":        true,
	"vacuumProtocolCheck": true,
}

// checkProtocol returns ErrUnsupported naming the first reason we cannot read a table with p.
func checkProtocol(p Protocol) error {
	if p.MinReaderVersion > maxReaderVersion {
		return fmt.Errorf("%w: minReaderVersion %d (we read up to %d)", ErrUnsupported, p.MinReaderVersion, maxReaderVersion)
	}
	if p.MinReaderVersion < maxReaderVersion {
		return nil // readerFeatures exist only at reader version 3
	}
	for _, f := range p.ReaderFeatures {
		if !supportedReaderFeatures[f] {
			return fmt.Errorf("%w: reader feature %q", ErrUnsupported, f)
		}
	}
	return nil
}
