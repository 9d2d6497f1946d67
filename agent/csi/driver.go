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

// Package csi is the node agent's CSI node plugin, data.pqcache.dev: a pod names a Dataset in an
// inline volume and gets its node's copy bind-mounted read-only, one whole generation, held until the
// pod's volume is unpublished, so that readers need no pqcache code and no flock. The agent registers
// the driver with kubelet itself (registration.go), since the usual registrar sidecar is not
// available to us. The plugin has no controller service: there is nothing to provision or attach.
package csi

import (
	"context"
	"log/slog"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// DriverName is the CSI driver's name: pods name it in their inline volumes.
const DriverName = "data.pqcache.dev"

// Volume attributes a pod sets, and those kubelet adds with podInfoOnMount.
const (
	// AttributeDataset names the Dataset, in the pod's namespace.
	AttributeDataset = "dataset"
	// AttributeGeneration asks for one generation instead of the current one.
	AttributeGeneration = "generation"

	attributePodNamespace = "csi.storage.k8s.io/pod.namespace"
	attributePodName      = "csi.storage.k8s.io/pod.name"
	attributeEphemeral    = "csi.storage.k8s.io/ephemeral"
)

// CopyDirs maps a Dataset to its copy's directory on this node (the agent's Copies).
type CopyDirs interface {
	Dir(ds *datav1alpha1.Dataset) string
}

// Driver is the node plugin. Publish and unpublish run one at a time: each is a few cache reads, a
// flock and a mount, and serialising them makes kubelet's retries of one volume trivially safe.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedNodeServer

	// Node is this node's name, the CSI node ID.
	Node string
	// Reader reads Datasets and this node's DatasetReplicas (the agent's cache), and Copies names
	// their directories: the driver in the agent's own process (single-process mode).
	Reader client.Reader
	Copies CopyDirs
	// Locator, when set, asks the unprivileged agent instead of Reader and Copies: the driver in the
	// privileged mount container (split.go).
	Locator Locator
	// CacheRoot, when set, confines what the driver mounts: the copy's directory and the generation
	// held must lie beneath it, reached without a symlink (split.go).
	CacheRoot string
	// OnChange, when set, is called after each publish and unpublish (the in-use reporter's cue).
	OnChange func()
	Mounter  Mounter
	// Volumes records what is published, so that an agent restarted under running readers holds
	// their generations again (see Volumes).
	Volumes *Volumes
	Version string
	Log     *slog.Logger

	mu sync.Mutex
}

// GetPluginInfo names the driver.
func (d *Driver) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: DriverName, VendorVersion: d.Version}, nil
}

// GetPluginCapabilities reports none: a node plugin alone, no controller service.
func (d *Driver) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

// Probe says the plugin is ready: it serves once the agent's cache has synced.
func (d *Driver) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

// NodeGetCapabilities reports none: no staging, no stats; publish is all there is.
func (d *Driver) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	return &csipb.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo gives kubelet the node ID, which is the node's name.
func (d *Driver) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: d.Node}, nil
}
