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

package cli

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/agent/peer/identity"
	"github.com/pqcache/pqcache/agent/peer/peertls"
)

// peerSecurity is how an agent talks to its peers: the TLS it serves, the identity it sends, and
// the check of the identity it is sent.
type peerSecurity struct {
	serverTLS *tls.Config
	client    peer.ClientAuth
	auth      peer.Authenticator
}

// newPeerSecurity adds the certificate requester to mgr and returns what the peer server and the
// followers use. The agent's token (--peer-token-file) is kubelet's projected, rotated one; its
// certificate is issued through a CertificateSigningRequest for this pod's IP and node.
func newPeerSecurity(mgr ctrl.Manager, o agentOptions, log *slog.Logger) (*peerSecurity, error) {
	caMap, err := namespacedName("--peer-ca-configmap", o.peerCA)
	if err != nil {
		return nil, err
	}
	sa, err := namespacedName("--peer-service-account", o.peerServiceAccount)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(os.Getenv("POD_IP"))
	if ip == nil {
		return nil, fmt.Errorf("POD_IP %q is not an IP: the peer certificate names this pod's IP", os.Getenv("POD_IP"))
	}
	cert, trust := &peertls.Certificate{}, &peertls.Trust{}
	req := &peertls.Requester{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: o.node, IPs: []net.IP{ip},
		CA: caMap, Cert: cert, Trust: trust, Log: log.With("component", "peer-tls")}
	if err := mgr.Add(req); err != nil {
		return nil, err
	}
	token := &identity.TokenFile{Path: o.peerTokenFile}
	return &peerSecurity{
		serverTLS: peertls.ServerConfig(cert),
		client:    identity.Client{Token: token.Token, HTTP: trust.HTTPClient},
		auth:      identity.NewVerifier(mgr.GetClient(), sa.Namespace, sa.Name),
	}, nil
}

// namespacedName parses a flag's NAMESPACE/NAME.
func namespacedName(flag, v string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%s %q: want NAMESPACE/NAME", flag, v)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
