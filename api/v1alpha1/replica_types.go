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

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaPolicy asks for a copy of the Dataset on the local disk of each chosen node, kept by the
// node agents (no claim, no Job per refresh): one node syncs from the bucket, the others copy its
// generations from it.
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.minReady <= self.maxReplicas",message="minReady cannot exceed maxReplicas: the Dataset would never be Ready"
type ReplicaPolicy struct {
	// nodeSelector picks the nodes that get a copy, among those the node agent runs on. Empty: every
	// node the agent runs on.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// nodeAffinity also picks the nodes that get a copy, with node selector terms as a pod's
	// requiredDuringSchedulingIgnoredDuringExecution has them (In, NotIn, Exists, Gt...; terms ORed).
	// +optional
	NodeAffinity *corev1.NodeSelector `json:"nodeAffinity,omitempty"`

	// tolerations let copies go to nodes with these taints (NoSchedule, NoExecute). The agent's
	// DaemonSet must tolerate them too.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// maxReplicas is the most copies to keep. Omitted: one on every chosen node.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// minReady is how many copies must hold the current generation for the Dataset to be Ready.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MinReady int32 `json:"minReady,omitempty"`

	// maxBytes caps the size of the Dataset's copy on each node: the files of one generation (the
	// objects that include/exclude select). A sync that would make a larger generation copies nothing
	// past the cap, fails with reason OverByteCap, and the copy keeps its last published generation;
	// the other Datasets on the node go on syncing. Older generations that readers still hold, up to
	// sync.keepGenerations, share unchanged files with the current one and take room for what changed
	// only. 0 keeps no file. Omitted: no cap but the node's free space and its agent's node reserve.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",message="maxBytes must be a Kubernetes quantity, a size such as 50Gi or 500G"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('0'))",message="maxBytes must be 0 or more: it is a size in bytes, such as 50Gi"
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`
}

// ReplicasStatus sums up the Dataset's per-node copies from their DatasetReplicas.
type ReplicasStatus struct {
	// desired is the number of copies the Dataset asks for on the nodes that match.
	// +required
	Desired int32 `json:"desired"`
	// ready is the number of copies that hold the current generation on a Ready node.
	// +required
	Ready int32 `json:"ready"`
	// readyOfDesired is "ready/desired", for the printer column.
	// +optional
	ReadyOfDesired string `json:"readyOfDesired,omitempty"`
	// matchingNodes is the number of nodes that match the policy.
	// +required
	MatchingNodes int32 `json:"matchingNodes"`
	// seed is the node whose copy syncs from the bucket; the others copy its generations.
	// +optional
	Seed string `json:"seed,omitempty"`
	// generation is the generation the seed published last: the one every copy converges to.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// recordedSyncToken is the seed's sync request whose outcome lastSync records.
	// +optional
	RecordedSyncToken string `json:"recordedSyncToken,omitempty"`
	// nodeLabel is the label that nodes holding a ready copy carry (its value is the Dataset's
	// namespace): pods select those nodes with it. Long names are hashed to fit a label key.
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`
	// nodes lists each copy: which generation its node holds, and why it is not ready.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=1000
	Nodes []ReplicaNodeStatus `json:"nodes,omitempty"`
}

// ReplicaNodeStatus is one node's copy.
type ReplicaNodeStatus struct {
	// node is the node's name.
	// +required
	Node string `json:"node"`
	// generation is the generation the copy holds (0: none yet).
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// ready is true when the copy holds the current generation on a Ready node.
	// +required
	Ready bool `json:"ready"`
	// reason says why the copy is not ready (NodeNotReady, InsufficientCapacity, Syncing...).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ReplicaRole is what a node's copy does.
// +kubebuilder:validation:Enum=Seed;Follower
type ReplicaRole string

const (
	// RoleSeed syncs from the bucket.
	RoleSeed ReplicaRole = "Seed"
	// RoleFollower copies the seed's generations from a peer, falling back to the bucket.
	RoleFollower ReplicaRole = "Follower"
)

// DatasetReplicaSpec is what the controller asks of one node's agent.
type DatasetReplicaSpec struct {
	// datasetName is the Dataset, in this namespace, the copy is of.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	DatasetName string `json:"datasetName"`
	// nodeName is the node that keeps the copy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	NodeName string `json:"nodeName"`
	// role is Seed (sync from the bucket) or Follower (copy generation from a peer).
	// +required
	Role ReplicaRole `json:"role"`
	// syncToken asks the seed for a listing sync whenever it changes (the Dataset's schedule,
	// manual token or first sync).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SyncToken string `json:"syncToken,omitempty"`
	// sourceHash is, on the seed, the SourceHash of the Dataset spec the sync token was made for. The
	// agent syncs only once the Dataset it reads has it: its cache of Datasets may lag behind the
	// DatasetReplica, and a sync of the old source would be recorded as one of the new.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SourceHash string `json:"sourceHash,omitempty"`
	// minGeneration is, on the seed, the newest generation any copy holds: the seed's next generation
	// is numbered above it, so that a seed that lost its disk never reuses a number the followers hold.
	// +optional
	MinGeneration int64 `json:"minGeneration,omitempty"`
	// generation is, on a follower, the seed's generation to copy.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// peer is, on a follower, the endpoint of the agent to copy from (http://IP:PORT); the bucket is
	// the fallback.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Peer string `json:"peer,omitempty"`
	// manifestDigest is, on a follower, the digest of the manifest of spec.generation as the seed's
	// agent published it in its own DatasetReplica's status (which only the seed's node may write).
	// The follower accepts a peer's listing and bytes only when they match that manifest.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	ManifestDigest string `json:"manifestDigest,omitempty"`
}

// DatasetReplicaStatus is what the node's agent reports. The agent is its only writer.
type DatasetReplicaStatus struct {
	// conditions hold Ready (the copy holds spec's generation, or the seed's last sync succeeded).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// generation is the generation the copy publishes now.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// files is how many files that generation holds.
	// +optional
	Files int64 `json:"files,omitempty"`
	// bytes is the size of that generation's files.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// observedSyncToken is the spec.syncToken the last finished sync answered.
	// +optional
	ObservedSyncToken string `json:"observedSyncToken,omitempty"`
	// manifestDigest is the digest of the manifest of status.generation: "sha256:<hex>" of its object
	// index, which lists every key with its size, LastModified, ETag, checksum and parts, in key order.
	// Followers accept a peer's copy of that generation only when the manifest it serves has this
	// digest.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	ManifestDigest string `json:"manifestDigest,omitempty"`
	// endpoint is where this agent serves its copies to peers (http://IP:PORT).
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// lastSync is the outcome of the agent's last sync of this copy.
	// +optional
	LastSync *SyncResult `json:"lastSync,omitempty"`
}

// DatasetReplica is one node's copy of a Dataset with spec.replicas: the controller says what the
// copy should hold, the node's agent keeps it and reports. It is owned by its Dataset and goes with it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pqdr,categories=pqcache
// +kubebuilder:printcolumn:name="Dataset",type=string,JSONPath=`.spec.datasetName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.status.generation`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type DatasetReplica struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec is the copy the controller wants on the node.
	// +required
	Spec DatasetReplicaSpec `json:"spec"`

	// status is what the node's agent reports about its copy.
	// +optional
	Status DatasetReplicaStatus `json:"status,omitzero"`
}

// DatasetReplicaList is a list of DatasetReplicas.
// +kubebuilder:object:root=true
type DatasetReplicaList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []DatasetReplica `json:"items"`
}

// Labels on DatasetReplicas, so that an agent watches only its node's and the controller lists a
// Dataset's. Values longer than a label admits are shortened with a hash (LabelValue).
const (
	LabelReplicaDataset = "data.pqcache.dev/dataset"
	LabelReplicaNode    = "data.pqcache.dev/node"
)

// Reasons of per-node copies.
const (
	// ReasonNotEnoughNodes: fewer nodes match spec.replicas than minReady asks for.
	ReasonNotEnoughNodes = "NotEnoughNodes"
	// ReasonReplicasNotReady: fewer copies than minReady hold the current generation.
	ReasonReplicasNotReady = "ReplicasNotReady"
	// ReasonNodeNotReady: the copy's node is not Ready; its copy does not count.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonCopying: a follower copies the current generation.
	ReasonCopying = "Copying"
	// ReasonNoAgent: no agent reported for the node yet, or no Ready agent pod runs on it now.
	ReasonNoAgent = "NoAgent"
	// ReasonPeerManifestMismatch: a follower's peer served a manifest, a listing or object metadata
	// that differs from the manifest the seed published for the generation (spec.manifestDigest), or
	// the seed published none; the follower copied nothing from it and keeps its last good generation.
	ReasonPeerManifestMismatch = "PeerManifestMismatch"
)

func init() {
	SchemeBuilder.Register(register(&DatasetReplica{}, &DatasetReplicaList{}))
}

// LabelValue is a name as a label value: itself when it fits (63 characters), else as much of it as
// fits beside a hash of the whole name, so that two long names never collide. The controller labels
// what it creates with it (a Dataset's DatasetReplicas by Dataset and by node), and a node agent
// selects its node's copies with it.
func LabelValue(name string) string {
	if len(name) <= maxLabelValue {
		return name
	}
	h := sha256.Sum256([]byte(name))
	tag := hex.EncodeToString(h[:])[:10]
	if cut := strings.TrimRight(name[:maxLabelValue-len(tag)-1], "-."); cut != "" {
		return cut + "-" + tag
	}
	return tag
}

// NodeLabelPrefix starts the labels of nodes that hold a ready copy of a Dataset.
const NodeLabelPrefix = "dataset.data.pqcache.dev/"

// NodeLabelKey is the label a node carries while it holds a ready copy of Dataset namespace/name,
// with the namespace as its value: "dataset.data.pqcache.dev/<namespace>.<name>", the name part
// hashed when it is longer than a label key admits (status.replicas.nodeLabel gives the mapping).
// Pods that read the Dataset select nodes by it; the locality webhook adds that selection.
func NodeLabelKey(namespace, name string) string {
	return NodeLabelPrefix + LabelValue(namespace+"."+name)
}

// maxLabelValue is the longest label value Kubernetes admits.
const maxLabelValue = 63
