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

package main

import (
	"os"
	"path/filepath"
)

// The machine's cache keeps the tarballs of images built from stamped inputs (the Spark engine's,
// minutes to build and hundreds of megabytes) once per machine, as hack/install-tool.sh and
// hack/locked-venv.sh keep tools and venvs: a fresh clone (CI's) takes the tarball its inputs name
// instead of building it again. A cache that cannot be read or written only costs a build.

// envCacheDir overrides the machine's cache directory (default ~/.cache/pqcache).
const envCacheDir = "PQCACHE_CACHE_DIR"

// machineCacheFile is where the tarball of image name built from the inputs of stamp is kept.
func machineCacheFile(name, stamp string) string {
	dir := os.Getenv(envCacheDir)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "pqcache")
	}
	return filepath.Join(dir, "images", name+"-"+stamp[:min(len(stamp), 16)]+".tar")
}

// fromMachineCache puts the cached tarball of name built from stamp into dir, with its stamp, and
// reports whether it did.
func fromMachineCache(dir, name, stamp string) bool {
	cached := machineCacheFile(name, stamp)
	if cached == "" {
		return false
	}
	if _, err := os.Stat(cached); err != nil {
		return false
	}
	tarball := filepath.Join(dir, name+".tar")
	if err := linkOrCopy(cached, tarball); err != nil {
		logf("the machine's cache has %s but it cannot be used: %v", cached, err)
		return false
	}
	return os.WriteFile(filepath.Join(dir, name+".inputs"), []byte(stamp+"\n"), 0o644) == nil
}

// toMachineCache keeps dir's tarball of name, built from stamp, in the machine's cache.
func toMachineCache(dir, name, stamp string) {
	cached := machineCacheFile(name, stamp)
	if cached == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		logf("not keeping the %s image in the machine's cache: %v", name, err)
		return
	}
	if err := linkOrCopy(filepath.Join(dir, name+".tar"), cached); err != nil {
		logf("not keeping the %s image in the machine's cache: %v", name, err)
	}
}

// linkOrCopy makes dst hold src's bytes: a hard link when both are on one file system, else a copy,
// written beside dst and renamed, so dst is never half there.
func linkOrCopy(src, dst string) error {
	tmp := dst + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	return os.Rename(tmp, dst)
}
