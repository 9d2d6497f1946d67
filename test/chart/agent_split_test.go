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

package chart

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// container is the pod's container (kind: containers or initContainers) with that name.
func container(t *testing.T, pod map[string]any, kind, name string) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(pod, kind)
	for _, c := range cs {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	t.Fatalf("no %s %q in the agent's pod", kind, name)
	return nil
}

// TestAgentOnlyTheMountIsPrivileged: the agent's pod splits as CSI drivers do. Only the mount
// container is privileged (and gets no Secret); the agent container, which parses the network, runs
// as a non-root user with no capability, no privilege escalation, a read-only root filesystem and
// RuntimeDefault seccomp; the init container that gives it the cache root is root with CAP_CHOWN
// alone. The two talk over a socket in an emptyDir, and the mount container sees the cache read-only;
// it is a native sidecar, started (and holding published volumes' generations again) before the agent.
// Without the CSI driver, there is no mount container and nothing privileged.
func TestAgentOnlyTheMountIsPrivileged(t *testing.T) {
	for _, csi := range []string{"true", "false"} {
		pod, _, _ := unstructured.NestedMap(render(t, "agent.enabled=true", "agent.csi.enabled="+csi).one(t, "DaemonSet").Object, "spec", "template", "spec")
		for _, kind := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(pod, kind)
			for _, c := range cs {
				c := c.(map[string]any)
				if v, _, _ := unstructured.NestedBool(c, "securityContext", "privileged"); v != (c["name"] == "mount") {
					t.Errorf("agent.csi.enabled=%s: %s %s privileged: %v", csi, kind, c["name"], v)
				}
			}
		}
		agent := container(t, pod, "containers", "agent")
		sc, _, _ := unstructured.NestedMap(agent, "securityContext")
		if sc["runAsNonRoot"] != true || sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true {
			t.Errorf("agent.csi.enabled=%s: agent securityContext %v", csi, sc)
		}
		if uid := fmt.Sprint(sc["runAsUser"]); uid != "65532" {
			t.Errorf("agent.csi.enabled=%s: the agent runs as user %s, want 65532", csi, uid)
		}
		if drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop"); !reflect.DeepEqual(drop, []string{"ALL"}) {
			t.Errorf("agent.csi.enabled=%s: agent drops %v, want ALL", csi, drop)
		}
		if add, ok, _ := unstructured.NestedSlice(sc, "capabilities", "add"); ok {
			t.Errorf("agent.csi.enabled=%s: agent adds %v", csi, add)
		}
		if v, _, _ := unstructured.NestedString(sc, "seccompProfile", "type"); v != "RuntimeDefault" {
			t.Errorf("agent.csi.enabled=%s: agent seccomp %q", csi, v)
		}
		initSC, _, _ := unstructured.NestedMap(container(t, pod, "initContainers", "chown-cache"), "securityContext")
		drop, _, _ := unstructured.NestedStringSlice(initSC, "capabilities", "drop")
		add, _, _ := unstructured.NestedStringSlice(initSC, "capabilities", "add")
		if !reflect.DeepEqual(drop, []string{"ALL"}) || !reflect.DeepEqual(add, []string{"CHOWN"}) || initSC["allowPrivilegeEscalation"] != false {
			t.Errorf("agent.csi.enabled=%s: chown-cache securityContext %v, want CAP_CHOWN alone", csi, initSC)
		}
		if csi == "false" {
			continue
		}
		mount := container(t, pod, "initContainers", "mount")
		if mount["restartPolicy"] != "Always" || mount["startupProbe"] == nil {
			t.Errorf("the mount container is not a sidecar that starts before the agent: %v", mount)
		}
		if _, ok := mount["envFrom"]; ok {
			t.Errorf("the privileged container gets %v", mount["envFrom"])
		}
		mounts := map[string]map[string]any{}
		for _, m := range mount["volumeMounts"].([]any) {
			mounts[m.(map[string]any)["name"].(string)] = m.(map[string]any)
		}
		if mounts["cache"]["readOnly"] != true || mounts["mount-socket"] == nil {
			t.Errorf("mount container's volumes %v: want the cache read-only and the socket's emptyDir", mounts)
		}
		args, _, _ := unstructured.NestedStringSlice(agent, "args")
		if !hasArg(args, "--mount-socket=/run/pqcache/mount.sock") || hasArg(args, "--csi") {
			t.Errorf("agent args %v: want the mount socket and no CSI driver", args)
		}
	}
}
