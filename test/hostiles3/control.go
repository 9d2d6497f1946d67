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

package hostiles3

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// controlPath is where the control API lives, beside the buckets: a test that runs the server in
// another process (`pqcache-testkit hostile-s3` in a pod) switches behaviours with plain HTTP requests:
//
//	PUT /_hostile/rules/BUCKET?behaviour=endless-body&op=list   switch BUCKET (op: list, get, head, or none for all)
//	PUT /_hostile/rules/BUCKET                                  make BUCKET well-behaved again
//	GET /_hostile/stats                                         the counters, as JSON
const controlPath = "/_hostile/"

// ParseRule reads a behaviour and an op by name, refusing unknown ones.
func ParseRule(behaviour, op string) (Rule, error) {
	b, o := Behaviour(behaviour), Op(op)
	if b != Good && !slices.Contains(Behaviours, b) {
		return Rule{}, fmt.Errorf("unknown behaviour %q", behaviour)
	}
	if !slices.Contains([]Op{OpAny, OpList, OpGet, OpHead}, o) {
		return Rule{}, fmt.Errorf("unknown op %q: list, get, head or none", op)
	}
	return Rule{Behaviour: b, Op: o}, nil
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, controlPath)
	switch {
	case r.Method == http.MethodGet && rest == "stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"hostile": s.Stats.Hostile.Load(), "good": s.Stats.Good.Load(),
			"bodyBytes": s.Stats.BodyBytes.Load(), "away": s.Stats.Away.Load()})
	case r.Method == http.MethodPut && strings.HasPrefix(rest, "rules/"):
		rule, err := ParseRule(r.URL.Query().Get("behaviour"), r.URL.Query().Get("op"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.Set(strings.TrimPrefix(rest, "rules/"), rule)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unknown control request", http.StatusNotFound)
	}
}
