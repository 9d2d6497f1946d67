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
	"crypto/tls"
	"fmt"
	"net"
	"os"

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
// followers use. The agent's token (cfg.PeerTokenFile) is kubelet's projected, rotated one; its
// certificate is issued through a CertificateSigningRequest for this pod's IP and node.
func newPeerSecurity(mgr ctrl.Manager, cfg Config) (*peerSecurity, error) {
	ip := net.ParseIP(os.Getenv("POD_IP"))
	if ip == nil {
		return nil, fmt.Errorf("POD_IP %q is not an IP: the peer certificate names this pod's IP", os.Getenv("POD_IP"))
	}
	cert, trust := &peertls.Certificate{}, &peertls.Trust{}
	req := &peertls.Requester{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: cfg.Node, IPs: []net.IP{ip}, ServiceNames: cfg.Readers.ServiceNames,
		CA: cfg.PeerCA, Cert: cert, Trust: trust, Log: cfg.Log.With("component", "peer-tls")}
	if err := mgr.Add(req); err != nil {
		return nil, err
	}
	token := &identity.TokenFile{Path: cfg.PeerTokenFile}
	return &peerSecurity{
		serverTLS: peertls.ServerConfig(cert),
		client:    identity.Client{Token: token.Token, HTTP: trust.HTTPClient},
		auth:      identity.NewVerifier(mgr.GetClient(), cfg.PeerServiceAccount.Namespace, cfg.PeerServiceAccount.Name),
	}, nil
}
