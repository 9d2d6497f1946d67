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

// Package jobs holds what pqcache's controllers share about the worker Jobs and pods they create: the
// labels and names (valid for every name the API admits), the worker options and pod security,
// credentials and access policy in a worker's environment, the state of a Job and why its pod does
// not run, the accounts several owners share, the manager's cache of its own objects, and the one
// status write at the end of a reconcile.
package jobs
