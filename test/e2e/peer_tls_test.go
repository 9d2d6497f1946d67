//go:build e2e

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

package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
)

// Peers by identity, over TLS (issue 38, item 4; docs/security.md "Peers: identity and TLS"). The
// specs reach one agent's peer port through `kubectl port-forward` (TCP only: TLS is end to end),
// and act as another agent with a token the API server issues for that agent's pod.
var _ = Describe("Peer traffic between node agents", Ordered, func() {
	var (
		target, caller corev1.Pod
		addr           string // 127.0.0.1:PORT forwarded to target's peer port
		roots          *x509.CertPool
	)
	agentLabels := map[string]string{"app.kubernetes.io/instance": releaseName, "app.kubernetes.io/component": "agent"}

	BeforeAll(func() {
		var agents []corev1.Pod
		Eventually(func(g Gomega) {
			agents = readyPods(g, releaseNamespace, agentLabels)
			g.Expect(len(agents)).To(BeNumerically(">=", 2), "Ready agents")
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		target, caller = agents[0], agents[1]
		var cm corev1.ConfigMap
		Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: releaseName + "-peer-ca"}, &cm)).To(Succeed(),
			"the manager publishes the peer CA")
		roots = x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM([]byte(cm.Data[peertls.CAKey]))).To(BeTrue())
		var secrets corev1.SecretList
		Expect(c.List(ctx, &secrets, client.InNamespace(releaseNamespace))).To(Succeed())
		for _, s := range secrets.Items {
			Expect(s.Name).NotTo(ContainSubstring("peer-key"), "no key is shared between agents")
		}
	})

	// A port-forward per spec: kubectl's ends when the pod side closes a connection abruptly, which
	// the plain-HTTP spec makes the peer do.
	BeforeEach(func() {
		addr = portForward(releaseNamespace, target.Name, 7480)
	})

	// peerToken is a token of the agents' ServiceAccount bound to caller's pod, for audiences.
	peerToken := func(audiences ...string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: caller.Spec.ServiceAccountName}}
		tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(int64(600)),
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: caller.Name, UID: caller.UID}}}
		Expect(c.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		return tr.Status.Token
	}
	// send GETs a listing of a bucket no agent serves from the target with header: 404 means the
	// caller was verified (and the bucket is unknown), 403 that it was refused.
	send := func(scheme string, header http.Header) (int, string) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: target.Status.PodIP, MinVersion: tls.VersionTLS13}}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/e2e.nothing?list-type=2", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header = header.Clone()
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(body)
	}
	signed := func(token string) http.Header {
		nonce, err := identity.NewNonce()
		Expect(err).NotTo(HaveOccurred())
		return http.Header{"Authorization": {"Bearer " + token}, identity.HeaderNonce: {nonce},
			identity.HeaderTimestamp: {strconv.FormatInt(time.Now().UnixMilli(), 10)}}
	}

	It("refuses plain HTTP", func() {
		code, body := send("http", signed(peerToken(identity.Audience)))
		Expect(code).NotTo(BeElementOf(http.StatusOK, http.StatusNotFound, http.StatusForbidden), "plain HTTP reached the peer server: %s", body)
	})

	It("serves TLS with a certificate the cluster's CSR signer issued for the peer's pod IP and node, and the readers' Service", func() {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: target.Status.PodIP, MinVersion: tls.VersionTLS13})
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close() }()
		leaf := conn.ConnectionState().PeerCertificates[0]
		// The same certificate serves the node's S3 endpoint for readers, behind the Service pqcache-s3.
		Expect(leaf.DNSNames).To(Equal(append([]string{target.Spec.NodeName},
			peertls.ServiceDNSNames(releaseNamespace, "pqcache-s3", "cluster.local")...)))
		Expect(leaf.NotAfter.Sub(leaf.NotBefore)).To(BeNumerically("<=", peertls.DefaultLifetime+5*time.Minute))
	})

	It("accepts another agent's own token, and refuses no token or one for another audience", func() {
		code, body := send("https", signed(peerToken(identity.Audience)))
		Expect(code).To(Equal(http.StatusNotFound), "an agent's peer token: %s", body)
		code, body = send("https", http.Header{})
		Expect(code).To(Equal(http.StatusForbidden), body)
		code, body = send("https", signed(peerToken()))
		Expect(code).To(Equal(http.StatusForbidden), "the agent's API token: %s", body)
	})

	It("refuses a replayed request", func() {
		h := signed(peerToken(identity.Audience))
		code, body := send("https", h)
		Expect(code).To(Equal(http.StatusNotFound), body)
		code, body = send("https", h)
		Expect(code).To(Equal(http.StatusForbidden), "the same request again: %s", body)
		Expect(body).To(ContainSubstring("sent before"))
	})
})

// portForward forwards a local port to the pod's port with kubectl for the rest of the spec, and
// returns the local address.
func portForward(ns, pod string, port int) string {
	GinkgoHelper()
	kubectl := envOr("PQCACHE_KUBECTL", filepath.Join(repoRoot, "bin", "k8s", "1.37.2-linux-amd64", "kubectl"))
	cmd := exec.CommandContext(ctx, kubectl, "port-forward", "-n", ns, "pod/"+pod, "--address", "127.0.0.1", fmt.Sprintf(":%d", port))
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Wait() // its stderr is complete once it has exited
	}
	Expect(err).NotTo(HaveOccurred(), "kubectl port-forward: %s", stderr.String())
	m := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	Expect(m).NotTo(BeNil(), "kubectl port-forward said %q", strings.TrimSpace(line))
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return m[1]
}
