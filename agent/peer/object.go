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
	"net/http"
	"strconv"

	"github.com/pqcache/pqcache/agent/s3serve"
)

// object answers GetObject and HeadObject for "<generation>/<key>".
func (s *Server) object(w http.ResponseWriter, r *http.Request, root, name string) {
	g, key, ok := splitGeneration(name)
	if !ok || key == "" {
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchKey", "keys are <generation>/<key>")
		return
	}
	lease, idx, ok := s.hold(w, r, root, g)
	if !ok {
		return
	}
	defer lease.Release()
	obj, ok, err := idx.Find(key)
	idx.Close()
	if err != nil {
		s3serve.WriteError(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if !ok {
		s3serve.WriteError(w, r, http.StatusNotFound, "NoSuchKey", "no such key in generation "+strconv.FormatInt(g, 10))
		return
	}
	s3serve.ServeObject(w, r, lease.Dir, key, obj, s.log())
}
