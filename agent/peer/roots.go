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
	"fmt"
	"strings"
)

// RootsOf reads NAME=DIR arguments (`pqcache peer serve`) into a Server's Roots: bucket NAME serves
// the cache root DIR. A NAME holds no '/', since it is the first segment of a path-style request.
func RootsOf(args []string) (func(bucket string) (root string, ok bool), error) {
	roots := map[string]string{}
	for _, a := range args {
		name, dir, ok := strings.Cut(a, "=")
		if !ok || name == "" || dir == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q: want NAME=DIR, NAME without '/'", a)
		}
		roots[name] = dir
	}
	return func(bucket string) (string, bool) {
		r, ok := roots[bucket]
		return r, ok
	}, nil
}
