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

package agent_test

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

const agentNS, agentSA = "pqcache", "pqcache-agent"

var peerCA = types.NamespacedName{Namespace: agentNS, Name: "pqcache-peer-ca"}

// security is what the chart sets up for peers: the agents' ServiceAccount with its peer grants,
// and the manager's CSR signer.
type security struct{}

// startSecurity runs the manager's signer beside the operator and makes the agents' ServiceAccount; agents
// started after it run as the DaemonSet does between peers.
func (cl *cluster) startSecurity() {
	t := cl.t
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: agentSA}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-peer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{peerCA.Name}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-peer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "agent-peer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: agentNS, Name: agentSA}}},
	} {
		if err := cl.c.Create(cl.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(cl.cfg, ctrl.Options{Scheme: cl.scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	s := &peertls.Signer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CA: peerCA,
		Agent: types.NamespacedName{Namespace: agentNS, Name: agentSA}, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := s.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(cl.ctx) }()
	cl.secure = &security{}
}

// agent makes node's agent pod, gets its certificate through a CSR (before the agent starts, so
// that no follower meets a peer without one), writes its peer token where kubelet would, and sets
// the peer server up as internal/cli's newPeerSecurity does. It returns the agent's endpoint and
// its ClientAuth.
func (s *security) agent(cl *cluster, node string, mgr ctrl.Manager, srv *peer.Server, ps *agent.PeerServer, log *slog.Logger) (string, peer.ClientAuth) {
	t := cl.t
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "agent-" + node}, Spec: corev1.PodSpec{NodeName: node,
		ServiceAccountName: agentSA, Containers: []corev1.Container{{Name: "agent", Image: "pqcache"}}}}
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		if err := cl.c.Create(cl.ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.PodIP, pod.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
		if err := cl.c.Status().Update(cl.ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	apiCfg := rest.AnonymousClientConfig(cl.cfg)
	apiCfg.BearerToken = podToken(cl, pod)
	ac, err := client.New(apiCfg, client.Options{Scheme: cl.scheme})
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(podToken(cl, pod, identity.Audience)), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, trust := &peertls.Certificate{}, &peertls.Trust{}
	req := &peertls.Requester{Client: ac, Reader: ac, Node: node, IPs: []net.IP{net.ParseIP("127.0.0.1")}, CA: peerCA,
		Cert: cert, Trust: trust, Log: log, Poll: 100 * time.Millisecond}
	cl.waitFor(node+"'s agent gets its peer certificate", time.Minute, func() (bool, string) {
		err := req.Step(cl.ctx)
		return err == nil, fmt.Sprint(err)
	})
	srv.Auth = identity.NewVerifier(ac, agentNS, agentSA)
	srv.Authorize = (&agent.PeerAuthorizer{Reader: mgr.GetAPIReader()}).Authorize
	ps.TLS = peertls.ServerConfig(cert)
	token := &identity.TokenFile{Path: tokenFile}
	return "https://" + ps.Listener.Addr().String(), identity.Client{Token: token.Token, HTTP: trust.HTTPClient}
}

// podToken is a token of the agents' ServiceAccount bound to pod, for audiences (none: the API's).
func podToken(cl *cluster, pod *corev1.Pod, audiences ...string) string {
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(int64(600)),
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: agentSA}}
	if err := cl.c.SubResource("token").Create(cl.ctx, sa, tr); err != nil {
		cl.t.Fatal(err)
	}
	return tr.Status.Token
}

// TestCopiesOverTLSByIdentity: agents set up as the DaemonSet runs them (certificates through CSRs
// that the manager's signer approves, TLS between them, each request with the agent's own token,
// a Dataset served only to the nodes of its plan) fill followers from their peer: the bucket sends
// the data once, and no follower falls back to it.
func TestCopiesOverTLSByIdentity(t *testing.T) {
	cl := startCluster(t, nil)
	cl.startSecurity()
	cl.startS3()
	for i := range 4 {
		cl.put(fmt.Sprintf("day=%d/part-0.bin", i), 1<<20, byte(i))
	}
	dataBytes := int64(4 * (1 << 20) / 3 * 3)
	cl.addNode("node-a")
	cl.addNode("node-b")
	cl.addNode("node-c")
	ds := cl.dataset("sales", 3)
	cl.waitFor("every node holds generation 1", time.Minute, func() (bool, string) { return cl.copiesAt(ds, 1, "node-a", "node-b", "node-c") })
	// An agent publishes the generation on its disk before it writes the sync into its replica's status.
	var reps datav1alpha1.DatasetReplicaList
	cl.waitFor("every copy has reported its sync", 30*time.Second, func() (bool, string) {
		if err := cl.c.List(cl.ctx, &reps, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		for _, r := range reps.Items {
			if r.Status.LastSync == nil {
				return false, "no sync reported on " + r.Spec.NodeName
			}
		}
		return len(reps.Items) == 3, fmt.Sprintf("%d replicas", len(reps.Items))
	})
	for _, r := range reps.Items {
		ls := r.Status.LastSync
		if ls == nil || r.Spec.Role == datav1alpha1.RoleFollower && (ls.FilesFromFallback != 0 || ls.FilesCopied != 4) {
			t.Errorf("the copy on %s: %+v, want 4 files from its peer", r.Spec.NodeName, ls)
		}
		if r.Spec.Role == datav1alpha1.RoleFollower && (len(r.Spec.Peer) < 8 || r.Spec.Peer[:8] != "https://") {
			t.Errorf("the copy on %s copies from %q, not over TLS", r.Spec.NodeName, r.Spec.Peer)
		}
	}
	if sent := cl.bytes.Load(); sent < dataBytes || sent > dataBytes+dataBytes/10 {
		t.Errorf("the bucket sent %d bytes to fill 3 nodes; want the data set once (%d) plus listings", sent, dataBytes)
	}
}
