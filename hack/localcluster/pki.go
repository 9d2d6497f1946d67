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

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// identity is a client certificate the cluster's components present to the API server: the common
// name is the user, the organizations are its groups (the API server's x509 authenticator maps them
// so). server is the API server address its kubeconfig names, as seen from where it runs.
type identity struct {
	file   string
	user   string
	groups []string
	server string
}

// identities are the cluster's client certificates: the admin's (used from the host, through the
// forwarder), the control plane's (in the cluster namespace, on its loopback) and each node's kubelet
// and kube-proxy (in the node's namespace, over the link).
func (c *cluster) identities(t topology) []identity {
	local := fmt.Sprintf("https://127.0.0.1:%d", apiserverPort)
	link := fmt.Sprintf("https://%s:%d", controlPlaneIP, apiserverPort)
	ids := []identity{
		{file: "admin", user: "pqcache-local-admin", groups: []string{"system:masters"}, server: c.hostAPIServerURL()},
		{file: "controller-manager", user: "system:kube-controller-manager", server: local},
		{file: "scheduler", user: "system:kube-scheduler", server: local},
		{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}},
		// Bound to system:node-proxier by the API server's bootstrap policy.
		{file: "kube-proxy", user: "system:kube-proxy", server: link},
		// The nodes' volume provisioners create and delete PersistentVolumes, in the nodes' namespaces.
		{file: "provisioner", user: "pqcache-local-provisioner", groups: []string{"system:masters"}, server: link},
	}
	for _, n := range t.Nodes {
		ids = append(ids, identity{file: "kubelet-" + n.Name, user: "system:node:" + n.Name, groups: []string{"system:nodes"}, server: link})
	}
	return ids
}

// writePKI creates the cluster's certificate authority, the API server's and each kubelet's serving
// certificate, one client certificate and kubeconfig per component, and the service-account signing
// key. A cluster directory is created fresh by up, so there is nothing to reuse: keys never outlive the
// cluster they belong to.
func writePKI(c *cluster, t topology) error {
	dir := c.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newAuthority(dir)
	if err != nil {
		return err
	}
	// The serving certificate names every address a client may use: the host's forwarded loopback, the
	// control plane's address on the link, and the kubernetes Service's address and names.
	if err := ca.issue("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(controlPlaneIP), net.ParseIP(serviceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}); err != nil {
		return err
	}
	// Each kubelet serves logs, exec and port-forward on its node's address, with a certificate the API
	// server verifies (--kubelet-certificate-authority).
	for _, n := range t.Nodes {
		if err := ca.issue("kubelet-"+n.Name+"-serving", &x509.Certificate{
			Subject:     pkix.Name{CommonName: n.Name},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: []net.IP{net.ParseIP(n.IP)},
			DNSNames:    []string{n.Name},
		}); err != nil {
			return err
		}
	}
	for _, id := range c.identities(t) {
		if err := ca.issue(id.file, &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.user, Organization: id.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return err
		}
		if id.server == "" {
			continue
		}
		if err := writeKubeconfig(c, id.file, id.server); err != nil {
			return err
		}
	}
	return writeServiceAccountKey(dir)
}

// authority is the cluster's certificate authority, whose certificate and key are in dir, where it
// writes what it issues.
type authority struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newAuthority creates a self-signed certificate authority and writes it to dir/ca.crt and ca.key.
func newAuthority(dir string) (*authority, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "pqcache-local-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("self-signing the CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeCert(filepath.Join(dir, "ca.crt"), caDER); err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(dir, "ca.key"), caKey); err != nil {
		return nil, err
	}
	return &authority{dir: dir, cert: caCert, key: caKey}, nil
}

// issue signs tmpl, valid for a year, with a new key, and writes them to dir/<base>.crt and .key.
func (a *authority) issue(base string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(1, 0, 0)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return fmt.Errorf("signing %s: %w", base, err)
	}
	if err := writeCert(filepath.Join(a.dir, base+".crt"), der); err != nil {
		return err
	}
	return writeKey(filepath.Join(a.dir, base+".key"), key)
}

// writeServiceAccountKey writes dir/sa.key and sa.pub. Service-account tokens are signed by the API
// server and verified with the public half; the controller manager signs the tokens of its
// controllers with the same key.
func writeServiceAccountKey(dir string) error {
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// writeKubeconfig writes pki/<name>.kubeconfig with the certificate data embedded, so the file can be
// copied elsewhere and still work.
func writeKubeconfig(c *cluster, name, server string) error {
	read := func(f string) ([]byte, error) { return os.ReadFile(c.path("pki", f)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read(name + ".crt")
	if err != nil {
		return err
	}
	key, err := read(name + ".key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: name}
	cfg.CurrentContext = clusterName
	return clientcmd.WriteToFile(*cfg, c.path("pki", name+".kubeconfig"))
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key any) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}
