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

package cache

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/pqcache/pqcache/cache/manifest"
)

// asFound is what a sync's target was before the sync touched it: whether the directory existed, and
// whether it held pqcache's bookkeeping (DIR/.pqcache). A sync that fails before the store has
// answered once (a bucket that does not exist, refused credentials, an endpoint that is down) has
// learnt nothing and must leave nothing behind: not a sparse manifest.db and staging directories in
// a directory the user pointed at by mistake.
type asFound struct {
	dirExisted, metaExisted bool
}

// targetState reads what the target is before a sync.
func targetState(root string) asFound {
	exists := func(p string) bool {
		_, err := os.Lstat(p)
		return !errors.Is(err, fs.ErrNotExist)
	}
	return asFound{dirExisted: exists(root), metaExisted: exists(filepath.Join(root, manifest.Dir))}
}

// restore removes what the failed sync created: the bookkeeping it made in a directory that had none,
// and the directory itself when the sync made it and it is empty again. A cache that existed is left
// as it is, whatever the sync did (it publishes nothing before the store answers).
func (f asFound) restore(root string, log *slog.Logger) {
	if f.metaExisted {
		return
	}
	if err := os.RemoveAll(filepath.Join(root, manifest.Dir)); err != nil {
		log.Warn("Could not remove what a failed first sync made", "dir", root, "error", err)
		return
	}
	if !f.dirExisted {
		_ = os.Remove(root) // only when empty: anything else in it is not the sync's
	}
}
