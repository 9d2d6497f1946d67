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

// Package admission caps the worker Jobs of one kind running at once, across the cluster and on each
// node, and serves the keys that have waited longest first, so that one huge Dataset or many small
// ones cannot starve the rest. It lives in the manager's memory; every exit path of an owner forgets
// its keys, and a periodic sweep drops those of objects that are gone.
package admission
