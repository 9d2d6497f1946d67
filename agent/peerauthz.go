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

package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/agent/peer"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Bounds of PeerAuthorizer's memory of allowed (node, Dataset) pairs: a node taken out of a
// Dataset's plan loses access within authorizedFor.
const (
	authorizedFor = 30 * time.Second
	maxAuthorized = 4096
)

// PeerAuthorizer is the peer server's Authorize: a Dataset's generations go only to the nodes its
// plan names, that is, the nodes with a DatasetReplica of that Dataset. The agent's informer holds
// only its own node's DatasetReplicas, so it asks the API server (Reader, uncached) and remembers a
// yes for authorizedFor; a follower's many GETs cost one list.
type PeerAuthorizer struct {
	Reader client.Reader

	mu      sync.Mutex
	allowed map[string]time.Time
}

// Authorize says why caller may not read bucket ("<namespace>.<name>", as Bucket makes it).
func (p *PeerAuthorizer) Authorize(ctx context.Context, caller peer.Caller, bucket string) error {
	if caller.Node == "" {
		return errors.New("the caller's identity names no node")
	}
	ns, name, ok := strings.Cut(bucket, ".")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("no Dataset is served as %q", bucket)
	}
	key := caller.Node + "/" + bucket
	now := time.Now()
	p.mu.Lock()
	until, ok := p.allowed[key]
	p.mu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	var reps datav1alpha1.DatasetReplicaList
	if err := p.Reader.List(ctx, &reps, client.InNamespace(ns), client.MatchingLabels{
		datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(name), datav1alpha1.LabelReplicaNode: datav1alpha1.LabelValue(caller.Node)}); err != nil {
		return fmt.Errorf("listing the copies of %s/%s: %w", ns, name, err)
	}
	for _, r := range reps.Items {
		if r.Spec.NodeName == caller.Node && r.Spec.DatasetName == name && r.DeletionTimestamp.IsZero() {
			p.remember(key, now.Add(authorizedFor))
			return nil
		}
	}
	return fmt.Errorf("node %s keeps no copy of %s/%s", caller.Node, ns, name)
}

// remember keeps key allowed until until; a full memory is emptied (it only saves lists).
func (p *PeerAuthorizer) remember(key string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.allowed == nil || len(p.allowed) >= maxAuthorized {
		p.allowed = map[string]time.Time{}
	}
	p.allowed[key] = until
}
