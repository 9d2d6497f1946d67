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

package bench

import "github.com/pqcache/pqcache/api/wire"

// TerminationMessageLimit is the size Kubernetes keeps of a container's termination message.
const TerminationMessageLimit = wire.TerminationMessageLimit

// EncodeSummary packs a result for a termination message (wire.EncodeBenchSummary).
func EncodeSummary(res *Result, limit int) ([]byte, error) {
	return wire.EncodeBenchSummary(res, limit)
}

// DecodeSummary reads what EncodeSummary wrote (wire.DecodeBenchSummary).
func DecodeSummary(s string) (*Result, error) { return wire.DecodeBenchSummary(s) }
