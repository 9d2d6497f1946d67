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
	"log/slog"
	"sync/atomic"

	registerpb "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// csiVersions are the CSI versions the plugin speaks, as kubelet's registration asks for them.
var csiVersions = []string{"1.0.0"}

// Registration answers kubelet's plugin watcher: kubelet finds the registration socket in its
// plugins_registry directory, asks what it is (GetInfo), then tells the plugin whether it was
// registered. This is the node-driver-registrar sidecar's job, done in-process.
type Registration struct {
	registerpb.UnimplementedRegistrationServer

	// Endpoint is the CSI socket's path as kubelet sees it (kubelet's directory is mounted at the
	// same path in the agent's container).
	Endpoint string
	Log      *slog.Logger

	registered atomic.Bool
}

// GetInfo names the driver and its socket.
func (r *Registration) GetInfo(context.Context, *registerpb.InfoRequest) (*registerpb.PluginInfo, error) {
	return &registerpb.PluginInfo{Type: registerpb.CSIPlugin, Name: DriverName, Endpoint: r.Endpoint, SupportedVersions: csiVersions}, nil
}

// NotifyRegistrationStatus records kubelet's answer; a refusal is logged with kubelet's reason.
func (r *Registration) NotifyRegistrationStatus(_ context.Context, st *registerpb.RegistrationStatus) (*registerpb.RegistrationStatusResponse, error) {
	r.registered.Store(st.GetPluginRegistered())
	if st.GetPluginRegistered() {
		r.Log.Info("kubelet registered the CSI driver", "driver", DriverName)
	} else {
		r.Log.Error("kubelet refused the CSI driver", "driver", DriverName, "reason", st.GetError())
	}
	return &registerpb.RegistrationStatusResponse{}, nil
}

// Registered says whether kubelet accepted the driver; the agent's readiness waits for it.
func (r *Registration) Registered() bool { return r.registered.Load() }
