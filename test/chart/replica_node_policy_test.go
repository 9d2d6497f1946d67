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
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// nodeNameExtra is the user extra that the API server fills from a bound ServiceAccount token's
// node claim: the node of the pod the token was issued for.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// TestAgentWritesOnlyItsOwnNodesReplicas installs the rendered chart's CRDs, agent RBAC and replica
// node policy into a real API server, and writes DatasetReplica status as the agent's ServiceAccount
// with a token bound to node-a (impersonated with the node-name extra that a pod's token carries):
// node-a's replica is written, node-b's is denied by the API server, and so is a token bound to no
// node. The RBAC alone allows all three: the denials are the policy's.
func TestAgentWritesOnlyItsOwnNodesReplicas(t *testing.T) {
	objs := render(t, "agent.enabled=true")
	cfg, admin := startWithCRDsAndAdmin(t, objs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{"pqcache-system", "data"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	sa := ""
	for _, u := range objs {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if u.GetKind() == "ServiceAccount" && strings.HasSuffix(u.GetName(), "-agent") {
				sa = u.GetName()
			}
			if err := admin.Create(ctx, u); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	if sa == "" {
		t.Fatal("the chart renders no agent ServiceAccount")
	}
	for _, node := range []string{"node-a", "node-b"} {
		rep := &datav1alpha1.DatasetReplica{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "tpch-" + node},
			Spec: datav1alpha1.DatasetReplicaSpec{DatasetName: "tpch", NodeName: node, Role: datav1alpha1.RoleFollower}}
		if err := admin.Create(ctx, rep); err != nil {
			t.Fatal(err)
		}
	}
	agentA := asAgent(t, cfg, sa, "node-a")
	unbound := asAgent(t, cfg, sa, "")

	// Policies take effect asynchronously: until node-b's write is denied, the policy is not loaded.
	deadline := time.Now().Add(time.Minute)
	for {
		err := writeGeneration(ctx, agentA, "tpch-node-b", 7)
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			if !strings.Contains(err.Error(), "writes only the DatasetReplicas of its own node") {
				t.Fatalf("node-b's replica was denied, but not with the policy's message: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("writing node-b's replica: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("an agent on node-a still writes node-b's DatasetReplica status a minute after the policy was created")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := writeGeneration(ctx, agentA, "tpch-node-a", 3); err != nil {
		t.Fatalf("the agent on node-a cannot write its own node's replica: %v", err)
	}
	if err := writeGeneration(ctx, unbound, "tpch-node-a", 4); err == nil {
		t.Fatal("a token bound to no node wrote node-a's replica")
	}
	var a, b datav1alpha1.DatasetReplica
	_ = admin.Get(ctx, client.ObjectKey{Namespace: "data", Name: "tpch-node-a"}, &a)
	_ = admin.Get(ctx, client.ObjectKey{Namespace: "data", Name: "tpch-node-b"}, &b)
	if a.Status.Generation != 3 || b.Status.Generation == 7 {
		t.Fatalf("generations after the writes: node-a %d (want 3), node-b %d (want not 7)", a.Status.Generation, b.Status.Generation)
	}
}

// startWithCRDsAndAdmin starts envtest with the rendered chart's CRDs, and returns its config and an
// admin client.
func startWithCRDsAndAdmin(t *testing.T, objs rendered) (*rest.Config, client.Client) {
	t.Helper()
	cfg := startWithCRDs(t, objs)
	admin, err := client.New(cfg, client.Options{Scheme: chartScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, admin
}

func chartScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	return scheme
}

// asAgent is a client that the API server takes for the agent's ServiceAccount with a pod's bound
// token on node (no node claim when node is empty).
func asAgent(t *testing.T, cfg *rest.Config, sa, node string) client.Client {
	t.Helper()
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:pqcache-system:" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:pqcache-system", "system:authenticated"},
	}
	if node != "" {
		as.Impersonate.Extra = map[string][]string{nodeNameExtra: {node}}
	}
	c, err := client.New(as, client.Options{Scheme: chartScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeGeneration writes status.generation of DatasetReplica data/name as c, as the agent does (a
// merge patch of the status subresource).
func writeGeneration(ctx context.Context, c client.Client, name string, g int64) error {
	var rep datav1alpha1.DatasetReplica
	if err := c.Get(ctx, client.ObjectKey{Namespace: "data", Name: name}, &rep); err != nil {
		return err
	}
	orig := rep.DeepCopy()
	rep.Status.Generation = g
	return c.Status().Patch(ctx, &rep, client.MergeFrom(orig))
}
