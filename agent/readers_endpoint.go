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
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/pqcache/pqcache/agent/readers"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// ReadersCatalog is what the readers' endpoint serves a namespace on this node: the Datasets whose
// DatasetReplicas name this node (the agent's cache holds no other) and whose copy this agent has
// opened, under their sources' buckets and prefixes.
type ReadersCatalog struct {
	Reader client.Reader
	Copies *Copies
}

// Served lists the namespace's Datasets with a copy on this node.
func (c ReadersCatalog) Served(ctx context.Context, namespace string) []readers.Served {
	var reps datav1alpha1.DatasetReplicaList
	if err := c.Reader.List(ctx, &reps, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []readers.Served
	for _, rep := range reps.Items {
		if !rep.DeletionTimestamp.IsZero() {
			continue
		}
		var ds datav1alpha1.Dataset
		if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rep.Spec.DatasetName}, &ds); err != nil || !ds.DeletionTimestamp.IsZero() {
			continue
		}
		root, ok := c.Copies.Lookup(Bucket(namespace, ds.Name))
		// A Dataset made again under the same name has a copy of its own (<name>-<uid>).
		if !ok || filepath.Base(root) != ds.Name+"-"+string(ds.UID) {
			continue
		}
		s3 := ds.Spec.Source.S3
		out = append(out, readers.Served{Dataset: ds.Name, Bucket: s3.Bucket, Prefix: s3.Prefix, Root: root, Region: s3.Region,
			Source: cache.SourceID(s3.Endpoint, s3.Bucket, s3.Prefix)})
	}
	return out
}

// MasterKeys reads the readers' master key Secret by name (the agents' one Secret grant for it),
// at most once per refresh interval, and keeps the keys it read for when the API server is away.
type MasterKeys struct {
	Reader client.Reader
	Secret types.NamespacedName
	// Refresh is how stale the keys may be; 0 means a minute.
	Refresh time.Duration

	mu   sync.Mutex
	keys map[byte][]byte
	read time.Time
}

// Key returns the master key of key generation gen.
func (m *MasterKeys) Key(gen byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	refresh := m.Refresh
	if refresh == 0 {
		refresh = time.Minute
	}
	if m.keys == nil || time.Since(m.read) > refresh || m.keys[gen] == nil && time.Since(m.read) > time.Second {
		if err := m.load(); err != nil && m.keys == nil {
			return nil, err
		}
	}
	key := m.keys[gen]
	if len(key) < s3creds.MinMasterKey {
		return nil, fmt.Errorf("the master key Secret %s holds no key %s", m.Secret, s3creds.MasterDataKey(gen))
	}
	return key, nil
}

func (m *MasterKeys) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sec corev1.Secret
	if err := m.Reader.Get(ctx, m.Secret, &sec); err != nil {
		return fmt.Errorf("reading the readers' master key %s: %w", m.Secret, err)
	}
	keys := map[byte][]byte{}
	for gen := range 256 {
		if k := sec.Data[s3creds.MasterDataKey(byte(gen))]; k != nil {
			keys[byte(gen)] = k
		}
	}
	m.keys, m.read = keys, time.Now()
	return nil
}

// NodeClients refuses a client that is not a pod of this node (by the node's pod CIDRs) or the node
// itself (by its addresses), read from the Node object at most once a minute. The endpoint's
// Service keeps traffic on the node (internalTrafficPolicy: Local); this check is what makes a pod
// of another node, sent straight to this agent's pod address, get no answer.
type NodeClients struct {
	Reader client.Reader
	Node   string
	// Service names the readers' Service for the refusal message.
	Service string

	mu       sync.Mutex
	prefixes []netip.Prefix
	read     time.Time
}

// Check returns why addr may not read, or nil.
func (n *NodeClients) Check(addr netip.Addr) error {
	prefixes, err := n.current()
	if err != nil {
		return fmt.Errorf("this node's pod addresses are unknown: %w", err)
	}
	for _, p := range prefixes {
		if p.Contains(addr) {
			return nil
		}
	}
	return fmt.Errorf("%s is not a pod of node %s: read through the Service %s, which keeps each pod on its own node's endpoint", addr, n.Node, n.Service)
}

func (n *NodeClients) current() ([]netip.Prefix, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.prefixes != nil && time.Since(n.read) < time.Minute {
		return n.prefixes, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var node corev1.Node
	if err := n.Reader.Get(ctx, client.ObjectKey{Name: n.Node}, &node); err != nil {
		if n.prefixes != nil {
			return n.prefixes, nil // the last known, while the API server is away
		}
		return nil, err
	}
	prefixes, err := nodePrefixes(&node)
	if err != nil {
		return nil, err
	}
	n.prefixes, n.read = prefixes, time.Now()
	return prefixes, nil
}

// nodePrefixes are a node's pod CIDRs and its own addresses.
func nodePrefixes(node *corev1.Node) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range node.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("node %s's pod CIDR %q: %w", node.Name, c, err)
		}
		out = append(out, p.Masked())
	}
	for _, a := range node.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	if len(node.Spec.PodCIDRs) == 0 {
		return nil, errors.New("node " + node.Name + " has no pod CIDRs (spec.podCIDRs): run the agent with --readers-client-check=none where the CNI does not assign them")
	}
	return out, nil
}

// ReadersConfig configures the readers' endpoint in the agent; a zero Listen: none.
type ReadersConfig struct {
	Listen string
	// Service is the readers' Service, NAMESPACE/NAME, and ServiceNames its DNS names, which the
	// agent's certificate also names.
	Service      types.NamespacedName
	ServiceNames []string
	MasterKey    types.NamespacedName
	Epochs       s3creds.Epochs
	// Idle and MaxHold bound how long a reader's session holds its generations.
	Idle, MaxHold time.Duration
	// ClientCheck is "node" (only this node's pods and addresses) or "none".
	ClientCheck string
}

// newReadersServer is the readers' endpoint of this agent: its catalog read from the agent's cache
// (cached), the master key and the Node read by name (api).
func newReadersServer(api, cached client.Reader, copies *Copies, node string, cfg ReadersConfig, log *slog.Logger) (*readers.Server, error) {
	reader := api
	sessions := &readers.Sessions{Idle: cfg.Idle, MaxHold: cfg.MaxHold}
	m, err := readers.NewMetrics(metrics.Registry, sessions)
	if err != nil {
		return nil, fmt.Errorf("registering the readers' endpoint's metrics: %w", err)
	}
	srv := &readers.Server{Catalog: ReadersCatalog{Reader: cached, Copies: copies}, Epochs: cfg.Epochs,
		MasterKey: (&MasterKeys{Reader: reader, Secret: cfg.MasterKey}).Key,
		Sessions:  sessions, Metrics: m, Log: log}
	switch strings.ToLower(cfg.ClientCheck) {
	case "", "node":
		srv.ClientCheck = (&NodeClients{Reader: reader, Node: node, Service: cfg.Service.String()}).Check
	case "none":
	default:
		return nil, fmt.Errorf("readers' client check %q: node or none", cfg.ClientCheck)
	}
	return srv, nil
}
