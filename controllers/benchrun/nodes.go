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

package benchrun

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// csiDriverName is the node agent's CSI driver (agent/csi.DriverName), through which bench Jobs read
// the per-node copies of a Dataset with spec.replicas.
const csiDriverName = "data.pqcache.dev"

// readsCopies says whether the input reads the node's copy of a Dataset with spec.replicas (through
// the CSI driver, or the node's S3 endpoint for readers) rather than a claim or the bucket: its Jobs
// run on nodes that hold the run's generation.
func readsCopies(ds *datav1alpha1.Dataset, in datav1alpha1.BenchInput) bool {
	return ds.Spec.Replicas != nil && in.Type != datav1alpha1.InputClaim && in.Type != datav1alpha1.InputS3
}

// nodesHolding are the nodes whose copy holds generation g now, sorted.
func nodesHolding(ds *datav1alpha1.Dataset, g int64) []string {
	var nodes []string
	if ds.Status.Replicas != nil {
		for _, n := range ds.Status.Replicas.Nodes {
			if n.Generation == g && g > 0 {
				nodes = append(nodes, n.Node)
			}
		}
	}
	slices.Sort(nodes)
	return nodes
}

// generationHeldNowhere says why a Job of the run that reads per-node copies cannot start yet: no
// node holds the generation the run pinned. Empty when it can start.
func generationHeldNowhere(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, in datav1alpha1.BenchInput) string {
	if !readsCopies(ds, in) || len(nodesHolding(ds, run.Status.DatasetGeneration)) > 0 {
		return ""
	}
	return fmt.Sprintf("no node holds generation %d of Dataset %q, which the run pinned at its start", run.Status.DatasetGeneration, ds.Name)
}

// mountCopy mounts the node's copy of the pinned generation at /data through the CSI driver, and
// places the pod on a node that holds it (placeOnCopies).
func mountCopy(pod *corev1.PodSpec, c *corev1.Container, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) {
	g := run.Status.DatasetGeneration
	c.VolumeMounts = append([]corev1.VolumeMount{{Name: "data", MountPath: jobs.DataMountPath, ReadOnly: true}}, c.VolumeMounts...)
	pod.Volumes = append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: csiDriverName, ReadOnly: ptr.To(true),
		VolumeAttributes: map[string]string{"dataset": ds.Name, "generation": strconv.FormatInt(g, 10)},
	}}}}, pod.Volumes...)
	placeOnCopies(pod, run, ds)
}

// placeOnCopies places the pod on a node whose copy holds the run's generation. The Jobs of one run
// spread evenly over those nodes (no node runs two more of them than another), so that
// configurations run side by side on different nodes instead of sharing one node's CPUs and disk.
func placeOnCopies(pod *corev1.PodSpec, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) {
	g := run.Status.DatasetGeneration
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	} else {
		pod.Affinity = pod.Affinity.DeepCopy() // the run's own, shared with its other Jobs
	}
	if pod.Affinity.NodeAffinity == nil {
		pod.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Affinity.NodeAffinity
	var terms []corev1.NodeSelectorTerm
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: onNodes(terms, nodesHolding(ds, g))}
	pod.TopologySpreadConstraints = append(pod.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelBenchRun: datav1alpha1.LabelValue(run.Name)}},
	})
}

// onNodes narrows ORed node selector terms to the named nodes: each term on each node. Nodes are
// matched by name, not by the hostname label, which some clusters set to something else; a
// matchFields requirement names one node, so a term per node.
func onNodes(terms []corev1.NodeSelectorTerm, nodes []string) []corev1.NodeSelectorTerm {
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	var out []corev1.NodeSelectorTerm
	for _, t := range terms {
		for _, n := range nodes {
			t := *t.DeepCopy()
			t.MatchFields = append(t.MatchFields, corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{n}})
			out = append(out, t)
		}
	}
	return out
}

// placeResult records where a finished Job ran: its pod's node, and the node's zone when the node is
// still there.
func placeResult(res *datav1alpha1.BenchResult, pods []corev1.Pod, zoneOf func(node string) string) {
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			res.Node = p.Spec.NodeName
		}
	}
	if res.Node != "" {
		res.Zone = zoneOf(res.Node)
	}
}
