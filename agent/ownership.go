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

package agent

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ChownCache gives the cache root and everything under it to uid:gid, for the agent that runs as
// that user (the chart's init container, which runs as root with CAP_CHOWN alone). Caches written
// by an agent that ran as root hold root-owned files; this makes them the agent's.
//
// It walks with openat and O_NOFOLLOW from the root's descriptor and changes links themselves, so
// a symlink the (unprivileged) agent planted never leads it elsewhere on the node. Children are
// changed before their directory, and a directory already owned by uid:gid is not entered: after
// the first run, or after one that was interrupted, only what was left is visited, and a start is
// one stat. It returns how many entries it changed.
func ChownCache(root string, uid, gid int) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("opening the cache root %s: %w", root, err)
	}
	defer func() { _ = unix.Close(fd) }() // read only; the walk's errors are the ones to report
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", root, err)
	}
	if int(st.Uid) == uid && int(st.Gid) == gid {
		return 0, nil
	}
	n, err := chownChildren(fd, root, uid, gid)
	if err != nil {
		return n, err
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return n, fmt.Errorf("chown %s: %w", root, err)
	}
	return n + 1, nil
}

// chownChildren changes every entry of the open directory dir (named name, for errors).
func chownChildren(dir int, name string, uid, gid int) (int, error) {
	dup, err := unix.Dup(dir) // read through a duplicate: dir stays the caller's to close
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", name, err)
	}
	f := os.NewFile(uintptr(dup), name)
	names, err := f.Readdirnames(-1)
	_ = f.Close() // the duplicate, read to the end
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", name, err)
	}
	changed := 0
	for _, child := range names {
		n, err := chownEntry(dir, name+"/"+child, child, uid, gid)
		changed += n
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// chownEntry changes one entry of dir: a directory after its contents, anything else (links too)
// as it is.
func chownEntry(dir int, path, child string, uid, gid int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, child, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, nil // removed meanwhile
		}
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if int(st.Uid) == uid && int(st.Gid) == gid {
		return 0, nil // done already, and so is what it holds
	}
	n := 0
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		sub, err := unix.Openat(dir, child, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("opening %s: %w", path, err)
		}
		n, err = chownChildren(sub, path, uid, gid)
		_ = unix.Close(sub) // read only
		if err != nil {
			return n, err
		}
	}
	if err := unix.Fchownat(dir, child, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.ENOENT) {
		return n, fmt.Errorf("chown %s: %w", path, err)
	}
	return n + 1, nil
}
