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
	"context"
	"fmt"
	"os"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodePublishVolume bind-mounts the node's copy of the Dataset, read-only, at the pod's target: the
// generation asked for, or the current one, held until NodeUnpublishVolume. kubelet retries a
// publish until it succeeds, so a volume already published at the same target succeeds again.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	start := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if vol, ok := d.Volumes.Get(req.GetVolumeId()); ok {
		return d.republish(vol, req.GetTargetPath())
	}
	want, err := parseRequest(req.GetVolumeContext())
	if err != nil {
		return nil, err
	}
	dir, others, err := d.findCopy(ctx, want)
	if err != nil {
		return nil, err
	}
	lease, err := d.hold(want, others, dir)
	if err != nil {
		return nil, err
	}
	vol := &Volume{ID: req.GetVolumeId(), Target: req.GetTargetPath(), Dataset: want.key(), Dir: dir, Generation: lease.Generation}
	if err := d.mountLease(lease, vol.Target); err != nil {
		lease.Release()
		return nil, err
	}
	if err := d.Volumes.Add(vol, lease); err != nil {
		_ = d.Mounter.Unmount(vol.Target)
		lease.Release()
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.changed()
	d.Log.Info("Published a Dataset's copy", "volume", vol.ID, "dataset", vol.Dataset, "generation", vol.Generation,
		"pod", req.GetVolumeContext()[attributePodName], "tookMicros", time.Since(start).Microseconds())
	return &csipb.NodePublishVolumeResponse{}, nil
}

// checkCapability refuses what the driver cannot offer. The CSI spec requires a capability, and a
// copy is a directory tree: a filesystem, never a block device. Any access mode is accepted, since
// kubelet asks for a writer mode by default for inline volumes; the bind mount is read-only whatever
// the mode.
func checkCapability(c *csipb.VolumeCapability) error {
	switch {
	case c == nil:
		return status.Error(codes.InvalidArgument, "a volume capability is required")
	case c.GetBlock() != nil:
		return errorf(codes.InvalidArgument, "%s mounts a directory tree: a block volume is not offered", DriverName)
	case c.GetMount() == nil:
		return status.Error(codes.InvalidArgument, "the volume capability must ask for a filesystem (mount)")
	}
	return nil
}

// republish answers kubelet's retry of a publish that already happened.
func (d *Driver) republish(vol *Volume, target string) (*csipb.NodePublishVolumeResponse, error) {
	if vol.Target != target {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s is already published at %s", vol.ID, vol.Target)
	}
	mounted, err := d.Mounter.IsMounted(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if !mounted { // the mount went away under the record (someone unmounted it): mount it again
		if err := d.mountLease(vol.lease, target); err != nil {
			return nil, err
		}
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

// mount creates the target directory (kubelet creates only its parent) and binds dir there.
func (d *Driver) mount(dir, target string) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return status.Errorf(codes.Internal, "creating the target %s: %v", target, err)
	}
	if err := d.Mounter.BindReadOnly(dir, target); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// NodeUnpublishVolume unmounts the target and lets the generation go. Unpublishing what is not
// published succeeds: kubelet retries, and an agent restarted after a node reboot has no record.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	target := req.GetTargetPath()
	if err := d.Mounter.Unmount(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Errorf(codes.Internal, "removing the target %s: %v", target, err)
	}
	if err := d.Volumes.Remove(req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.changed()
	d.Log.Info("Unpublished a Dataset's copy", "volume", req.GetVolumeId())
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// errorf is a publish failure kubelet reports on the pod as a FailedMount event, message and all.
func errorf(code codes.Code, format string, args ...any) error {
	return status.Error(code, fmt.Sprintf(format, args...))
}
