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

package csi

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mounter makes and removes the read-only bind mounts of published volumes. Unit tests use a fake;
// the e2e suite proves the real one on the local cluster's kubelets.
type Mounter interface {
	// BindReadOnly mounts source at target, read-only, without devices or setuid.
	BindReadOnly(source, target string) error
	// Unmount removes the mount at target; nothing mounted there is no error.
	Unmount(target string) error
	// IsMounted says whether something is mounted at target.
	IsMounted(target string) (bool, error)
}

// BindMounter is the Mounter of a real node: mount(2) in the agent's mount namespace, whose
// kubelet directory propagates both ways (the DaemonSet's mountPropagation: Bidirectional).
type BindMounter struct{}

// BindReadOnly binds, then remounts the bind read-only: a bind mount takes its flags only on remount.
func (BindMounter) BindReadOnly(source, target string) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s at %s: %w", source, target, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		_ = unix.Unmount(target, 0)
		return fmt.Errorf("making the mount at %s read-only: %w", target, err)
	}
	return nil
}

// Unmount detaches the mount at target, if any.
func (BindMounter) Unmount(target string) error {
	err := unix.Unmount(target, 0)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // EINVAL: not a mount point
	}
	return fmt.Errorf("unmounting %s: %w", target, err)
}

// IsMounted reads the mount table: a bind mount from the same file system has the same device as
// its parent, so stat cannot tell.
func (BindMounter) IsMounted(target string) (bool, error) {
	target = filepath.Clean(target)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMountPath(fields[4]) == target {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
