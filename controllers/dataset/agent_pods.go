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

package dataset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AgentPods finds the node agents' pods (the chart's DaemonSet), so that a copy whose node runs no
// Ready agent is reported as such: its DatasetReplica's last status stays as the agent left it, but
// nobody keeps the copy fresh, and pods there cannot mount it through the CSI driver.
type AgentPods struct {
	// Namespace is the agents' namespace (the chart's release namespace).
	Namespace string
	// Selector matches the agents' pods and no other.
	Selector labels.Selector
}

// readyNodes returns the nodes running a Ready agent pod, or nil when no AgentPods are configured (a
// nil a: nothing is then known about the agents beyond what their DatasetReplicas say). Pods are read
// uncached through reader, as every pod read of the manager is: a few per Dataset with copies per
// replicaPoll.
func (a *AgentPods) readyNodes(ctx context.Context, reader client.Reader) (map[string]bool, error) {
	if a == nil {
		return nil, nil
	}
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(a.Namespace), client.MatchingLabelsSelector{Selector: a.Selector}); err != nil {
		return nil, fmt.Errorf("listing the node agents' pods in %s: %w", a.Namespace, err)
	}
	up := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && p.DeletionTimestamp.IsZero() && podReady(p) {
			up[p.Spec.NodeName] = true
		}
	}
	return up, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
