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
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/cache/generations"
)

// request is what a pod asked for in its volume's attributes.
type request struct {
	namespace, dataset string
	generation         int64 // 0: the current one
}

func (r request) key() string { return r.namespace + "/" + r.dataset }

// parseRequest reads the volume attributes. The Dataset is always the pod's namespace's: a pod
// cannot mount another namespace's data through the driver.
func parseRequest(attrs map[string]string) (request, error) {
	r := request{namespace: attrs[attributePodNamespace], dataset: attrs[AttributeDataset]}
	if r.dataset == "" {
		return r, errorf(codes.InvalidArgument, "volumeAttributes.%s is required: the name of a Dataset in the pod's namespace", AttributeDataset)
	}
	if r.namespace == "" {
		return r, errorf(codes.InvalidArgument, "kubelet passed no pod namespace: the CSIDriver object %s needs podInfoOnMount: true", DriverName)
	}
	if g := attrs[AttributeGeneration]; g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil || n <= 0 {
			return r, errorf(codes.InvalidArgument, "volumeAttributes.%s %q is not a generation number (1, 2, ...)", AttributeGeneration, g)
		}
		r.generation = n
	}
	return r, nil
}

// locate finds this node's copy of the Dataset: the Dataset must keep per-node copies, and this
// node must be one of its nodes. Every refusal names the nodes that do hold a copy, which kubelet
// puts in the pod's FailedMount event.
func (d *Driver) locate(ctx context.Context, r request) (*datav1alpha1.Dataset, error) {
	var ds datav1alpha1.Dataset
	if err := d.Reader.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.dataset}, &ds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errorf(codes.NotFound, "Dataset %s not found", r.key())
		}
		return nil, errorf(codes.Unavailable, "reading Dataset %s: %v", r.key(), err)
	}
	if ds.Spec.Replicas == nil {
		return nil, errorf(codes.FailedPrecondition, "Dataset %s keeps its data on a claim, not on nodes: mount its PersistentVolumeClaim instead of the %s driver", r.key(), DriverName)
	}
	if !d.keepsCopy(ctx, &ds) {
		return nil, errorf(codes.FailedPrecondition, "Dataset %s has no copy on node %s; %s", r.key(), d.Node, holders(&ds, r.generation))
	}
	return &ds, nil
}

// keepsCopy says whether the controller placed a copy of ds on this node.
func (d *Driver) keepsCopy(ctx context.Context, ds *datav1alpha1.Dataset) bool {
	var reps datav1alpha1.DatasetReplicaList
	if err := d.Reader.List(ctx, &reps, client.InNamespace(ds.Namespace),
		client.MatchingLabels{datav1alpha1.LabelReplicaNode: datav1alpha1.LabelValue(d.Node)}); err != nil {
		return false
	}
	for _, rep := range reps.Items {
		if rep.Spec.DatasetName == ds.Name && rep.Spec.NodeName == d.Node && rep.DeletionTimestamp.IsZero() {
			return true
		}
	}
	return false
}

// hold takes the generation the pod asked for from the copy at dir; a refusal names the nodes that
// the Dataset's status says hold one (others, from holders).
func (d *Driver) hold(r request, others, dir string) (*generations.Lease, error) {
	lease, err := generations.Hold(dir, r.generation)
	if err == nil {
		return lease, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, errorf(codes.Internal, "holding Dataset %s: %v", r.key(), err)
	}
	what := "no ready copy"
	if r.generation != 0 {
		what = fmt.Sprintf("no generation %d", r.generation)
	}
	return nil, errorf(codes.FailedPrecondition, "Dataset %s has %s on node %s yet; %s", r.key(), what, d.Node, others)
}

// holders names the nodes with a ready copy (of generation g, when g is not 0), from the Dataset's
// status, for a person reading the pod's events.
func holders(ds *datav1alpha1.Dataset, g int64) string {
	var nodes []string
	if ds.Status.Replicas != nil {
		for _, n := range ds.Status.Replicas.Nodes {
			if (g == 0 && n.Ready) || (g != 0 && n.Generation == g) {
				nodes = append(nodes, n.Node)
			}
		}
	}
	slices.Sort(nodes)
	switch {
	case len(nodes) == 0 && g != 0:
		return fmt.Sprintf("no node holds generation %d", g)
	case len(nodes) == 0:
		return "no node holds a ready copy yet"
	case g != 0:
		return fmt.Sprintf("nodes holding generation %d: %s", g, strings.Join(nodes, ", "))
	default:
		return "nodes with a ready copy: " + strings.Join(nodes, ", ")
	}
}
