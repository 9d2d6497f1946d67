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

package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Names, labels and annotations derived from a user's object name must be valid for every name the
// API admits: custom resources may be named with up to 253 characters, while label values and Job
// names (the Job controller copies them into a label) hold at most 63. Derived names keep as much of
// the user's name as fits, for people reading `kubectl get`, and end in a hash when they had to be
// cut, so two long names never collide (label values: datav1alpha1.LabelValue); the full name
// travels in an annotation.
const (
	// maxJobName is the longest Job name: the Job controller puts it in its pods' job-name label.
	MaxJobName = 63
	// maxObjectName is the longest name of a PersistentVolumeClaim (a DNS subdomain).
	MaxObjectName = 253
)

// HashOf is n hex digits of the SHA-256 of parts joined by '/'.
func HashOf(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return hex.EncodeToString(h[:])[:n]
}

// FitName joins base and suffix into a name of at most limit characters, cutting base where it must.
// A cut base ends in a hash of the whole base (so that names differing only past the cut stay
// distinct) and never in '-' or '.', which would make an invalid DNS name.
func FitName(base, suffix string, limit int) string {
	if len(base)+len(suffix) <= limit {
		return base + suffix
	}
	tag := "-" + HashOf(10, base)
	keep := max(0, limit-len(suffix)-len(tag))
	cut := strings.TrimRight(base[:min(keep, len(base))], "-.")
	if cut == "" {
		return strings.TrimPrefix(tag, "-") + suffix
	}
	return cut + tag + suffix
}
