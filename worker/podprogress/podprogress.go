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

// Package podprogress lets a worker publish its live progress as an annotation on its own pod, where
// the controller reads it: the controller stays the only writer of Dataset status, and nothing depends
// on the pods/log API (which some clusters, and the local test cluster, cannot serve).
//
// The worker needs `get` and `patch` on pods in its namespace; the ValidatingAdmissionPolicy shipped in
// config/rbac/worker_progress_policy.yaml narrows that to the one annotation on the worker's own pod.
package podprogress

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/pqcache/pqcache/api/wire"
)

// Publisher patches the annotation at most once per interval. It is safe for concurrent use.
type Publisher struct {
	client    kubernetes.Interface
	namespace string
	name      string
	interval  time.Duration

	mu       sync.Mutex
	last     time.Time
	disabled bool
	warn     func(error)
}

// FromEnvironment returns a Publisher for the pod named by the downward API, using the in-cluster
// configuration, or nil (progress off) outside a pod or without a service account token.
func FromEnvironment(interval time.Duration, warn func(error)) *Publisher {
	name, ns := os.Getenv(wire.EnvPodName), os.Getenv(wire.EnvPodNamespace)
	if name == "" || ns == "" {
		return nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	return New(cs, ns, name, interval, warn)
}

// New returns a Publisher for the pod namespace/name.
func New(client kubernetes.Interface, namespace, name string, interval time.Duration, warn func(error)) *Publisher {
	if warn == nil {
		warn = func(error) {}
	}
	return &Publisher{client: client, namespace: namespace, name: name, interval: interval, warn: warn}
}

// Publish writes v as the annotation unless the last write is more recent than the interval (force
// writes anyway). After a failure (for example, no permission) it stops trying: progress is a
// nicety, and the sync must not slow down for it.
func (p *Publisher) Publish(ctx context.Context, v any, force bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.disabled || (!force && time.Since(p.last) < p.interval) {
		return
	}
	p.last = time.Now()
	data, err := json.Marshal(v)
	if err != nil || len(data) > wire.ProgressMaxBytes {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{wire.ProgressAnnotation: string(data)}}})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := p.client.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "pqcache-worker"}); err != nil {
		p.disabled = true
		p.warn(fmt.Errorf("publishing progress on pod %s/%s (progress off from now on): %w", p.namespace, p.name, err))
	}
}
