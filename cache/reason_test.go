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
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

func TestVolumeReasonByErrno(t *testing.T) {
	path := func(errno syscall.Errno) error { return &os.PathError{Op: "write", Path: "/data/x", Err: errno} }
	link := func(errno syscall.Errno) error { return &os.LinkError{Op: "rename", Old: "a", New: "b", Err: errno} }
	cases := []struct {
		err  error
		want string
	}{
		{path(syscall.ENOSPC), wire.ReasonInsufficientCapacity},
		{link(syscall.EDQUOT), wire.ReasonInsufficientCapacity},
		{link(syscall.EROFS), wire.ReasonVolumeReadOnly},
		{path(syscall.EACCES), wire.ReasonVolumePermissionDenied},
		{link(syscall.EPERM), wire.ReasonVolumePermissionDenied},
		{fmt.Errorf("copying k: %w", path(syscall.EIO)), wire.ReasonVolumeIOError},
		// One path's problem, not the volume's.
		{link(syscall.ENOTDIR), ""},
		{link(syscall.ENAMETOOLONG), ""},
		// Not a file operation: a refused connection is EACCES too.
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EACCES)}, ""},
		{syscall.EIO, ""},
	}
	for _, tc := range cases {
		if got := volumeReason(tc.err); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
}
