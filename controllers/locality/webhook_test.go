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

package locality

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// podWithFutureFields mounts a Dataset and carries fields no Go type of this build knows, at the
// spec, in a container and inside the affinity: a newer API server's pod.
const podWithFutureFields = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"reader","namespace":"team-a"},
"spec":{"someFutureField":{"nested":[1,2]},
 "affinity":{"futureAffinity":{"x":"y"}},
 "containers":[{"name":"c","image":"busybox","futureContainerField":true}],
 "volumes":[{"name":"d","csi":{"driver":"data.pqcache.dev","volumeAttributes":{"dataset":"events"}}}]}}`

func handle(t *testing.T, raw string) admission.Response {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	p := &Placer{Mode: ModeRequired, decoder: admission.NewDecoder(scheme)}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Namespace: "team-a", Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: []byte(raw)}}}
	return p.Handle(t.Context(), req)
}

// TestWebhookPatchesOnlyTheAffinity: the patch, applied to the pod as the API server sent it, keeps
// every field this build does not know and adds the affinity; it touches no other path.
func TestWebhookPatchesOnlyTheAffinity(t *testing.T) {
	resp := handle(t, podWithFutureFields)
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("response %+v: want an allowed pod with a patch", resp.Result)
	}
	for _, op := range resp.Patches {
		if !strings.HasPrefix(op.Path, "/spec/affinity") || op.Operation == "remove" {
			t.Errorf("patch %s %s touches more than the affinity", op.Operation, op.Path)
		}
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply([]byte(podWithFutureFields))
	if err != nil {
		t.Fatalf("applying %s: %v", ops, err)
	}
	var pod struct {
		Spec struct {
			SomeFutureField map[string]any   `json:"someFutureField"`
			Containers      []map[string]any `json:"containers"`
			Affinity        map[string]any   `json:"affinity"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.SomeFutureField == nil || pod.Spec.Containers[0]["futureContainerField"] != true || pod.Spec.Affinity["futureAffinity"] == nil {
		t.Errorf("unknown fields lost: %s", out)
	}
	if !strings.Contains(string(out), `"dataset.data.pqcache.dev/team-a.events"`) || pod.Spec.Affinity["nodeAffinity"] == nil {
		t.Errorf("no node affinity added: %s", out)
	}
}

// TestWebhookLeavesOtherPodsUntouched: a pod that mounts no Dataset gets no patch at all.
func TestWebhookLeavesOtherPodsUntouched(t *testing.T) {
	resp := handle(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other","namespace":"team-a"},
"spec":{"someFutureField":{},"containers":[{"name":"c","image":"busybox"}]}}`)
	if !resp.Allowed || len(resp.Patches) != 0 || resp.PatchType != nil {
		t.Fatalf("an unrelated pod was patched: %+v", resp.Patches)
	}
}
