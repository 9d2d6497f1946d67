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

// Package manager wires pqcache's reconcilers into a controller-runtime manager: SetupAll registers
// the Dataset side (controllers/dataset) and the BenchRun side (controllers/benchrun) with the
// worker options defaulted and checked once. The manager command (internal/cli) builds the manager
// and calls it; the admission webhook (controllers/locality) and the event hub
// (controllers/eventhub) are added beside it there.
//
// Its tests are the envtest suite of the whole manager as it ships: CRD validation of the fixtures
// under controllers/testdata, and the samples applied as a user would.
package manager
