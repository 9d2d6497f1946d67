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
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Paths the webhook serves. The chart's MutatingWebhookConfiguration sends pods labelled with
// LabelMode to PathLabelled, and pods without the label in namespaces labelled with it to the path of
// the namespace's mode: the API server's selectors decide, so the webhook never reads namespaces.
const (
	PathLabelled  = "/place-pods"
	PathRequired  = "/place-pods/required"
	PathPreferred = "/place-pods/preferred"
)

// Placer is the admission handler of one path.
type Placer struct {
	// Reader reads Datasets and nodes (the manager's cache), for the zones of preferred placement.
	Reader client.Reader
	// Mode is the placement of this path; empty: the pod's LabelMode label says.
	Mode    string
	decoder admission.Decoder
}

// Register serves the three paths on the manager's webhook server.
func Register(srv webhook.Server, reader client.Reader, decoder admission.Decoder) {
	srv.Register(PathLabelled, &webhook.Admission{Handler: &Placer{Reader: reader, decoder: decoder}})
	srv.Register(PathRequired, &webhook.Admission{Handler: &Placer{Reader: reader, Mode: ModeRequired, decoder: decoder}})
	srv.Register(PathPreferred, &webhook.Admission{Handler: &Placer{Reader: reader, Mode: ModePreferred, decoder: decoder}})
}

// Handle adds the pod's node affinity. It never refuses a pod: a pod it cannot place is admitted
// unchanged, with a warning that says why.
func (p *Placer) Handle(ctx context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := p.decoder.Decode(req, &pod); err != nil {
		return admission.Allowed("not a pod this webhook can read").WithWarnings("pqcache locality: " + err.Error())
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	datasets := DatasetsRead(&pod)
	if len(datasets) == 0 {
		return admission.Allowed("the pod mounts no Dataset through " + csiDriver)
	}
	mode := p.Mode
	if mode == "" {
		mode = pod.Labels[LabelMode]
	}
	if mode != ModeRequired && mode != ModePreferred {
		return admission.Allowed("").WithWarnings("pqcache locality: " + LabelMode + "=" + mode + " is neither required nor preferred; the pod is placed as it is")
	}
	var zones map[string][]string
	if mode == ModePreferred {
		zones = p.zonesOf(ctx, pod.Namespace, datasets)
	}
	if !Place(&pod, mode, datasets, zones) {
		return admission.Allowed("already placed")
	}
	ops, err := affinityPatch(req.Object.Raw, pod.Spec.Affinity)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Patched("", ops...)
}

// affinityPatch is the JSON patch (RFC 6902) that turns the pod's affinity, as the API server sent
// it in raw, into placed. It is computed from the raw object, not from a pod decoded and encoded
// again: a round trip through this build's Go types would drop every field they do not know (a newer
// API server's), and the patch would remove them. It only adds or replaces under /spec/affinity, so
// a field it does not know, even inside the affinity, stays as it was.
func affinityPatch(raw []byte, placed *corev1.Affinity) ([]jsonpatch.JsonPatchOperation, error) {
	var orig struct {
		Spec struct {
			Affinity json.RawMessage `json:"affinity"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &orig); err != nil {
		return nil, fmt.Errorf("reading the pod's affinity: %w", err)
	}
	want, err := json.Marshal(placed)
	if err != nil {
		return nil, fmt.Errorf("encoding the affinity: %w", err)
	}
	const path = "/spec/affinity"
	if len(orig.Spec.Affinity) == 0 || string(orig.Spec.Affinity) == "null" {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, json.RawMessage(want))}, nil
	}
	diff, err := jsonpatch.CreatePatch(orig.Spec.Affinity, want)
	if err != nil {
		return nil, fmt.Errorf("comparing the affinity: %w", err)
	}
	ops := make([]jsonpatch.JsonPatchOperation, 0, len(diff))
	for _, op := range diff {
		if op.Operation == "remove" {
			continue // a field placed lacks is one this build does not know: keep it
		}
		op.Path = path + op.Path
		ops = append(ops, op)
	}
	return ops, nil
}

// zonesOf is, per Dataset, the zones of the nodes holding a ready copy; a Dataset or node it cannot
// read adds no zone.
func (p *Placer) zonesOf(ctx context.Context, namespace string, datasets []string) map[string][]string {
	zones := map[string][]string{}
	for _, name := range datasets {
		var ds datav1alpha1.Dataset
		if err := p.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &ds); err != nil || ds.Status.Replicas == nil {
			continue
		}
		for _, n := range ds.Status.Replicas.Nodes {
			var node corev1.Node
			if !n.Ready || p.Reader.Get(ctx, client.ObjectKey{Name: n.Node}, &node) != nil {
				continue
			}
			if z := node.Labels[corev1.LabelTopologyZone]; z != "" && !slices.Contains(zones[name], z) {
				zones[name] = append(zones[name], z)
			}
		}
		slices.Sort(zones[name])
	}
	return zones
}
