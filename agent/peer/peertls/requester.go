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

package peertls

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAKey is the key of the CA certificate in the CA ConfigMap.
const CAKey = "ca.crt"

// Requester keeps an agent's serving certificate and its trust in the peer CA current: a manager
// runnable that reads the CA ConfigMap and asks for a certificate when it has none or its current
// one is two thirds through its life.
type Requester struct {
	// Client creates CertificateSigningRequests; Reader reads them and the CA ConfigMap, uncached
	// (the agent's grants name no list or watch of either).
	Client client.Client
	Reader client.Reader
	Node   string
	IPs    []net.IP
	// ServiceNames are also asked for as DNS names: the readers' Service (ServiceDNSNames).
	ServiceNames []string
	// CA is the ConfigMap with the CA certificate (key CAKey).
	CA    types.NamespacedName
	Cert  *Certificate
	Trust *Trust
	Log   *slog.Logger
	// Lifetime asks for this lifetime (DefaultLifetime when 0); Poll is how often an issued
	// certificate is looked for (default a second), Timeout how long (default two minutes).
	Lifetime, Poll, Timeout time.Duration
}

// retryEvery is how soon a failed read of the CA or request of a certificate is tried again;
// checkEvery how often the CA is read again when all is well.
const (
	retryEvery = 10 * time.Second
	checkEvery = time.Minute
)

// Start keeps the certificate and the trust current until ctx ends.
func (r *Requester) Start(ctx context.Context) error {
	for {
		wait := checkEvery
		if err := r.Step(ctx); err != nil {
			r.Log.Warn("Keeping the peer certificate current", "error", err)
			wait = retryEvery
		}
		if at := r.Cert.RenewAt(); !at.IsZero() {
			wait = min(wait, max(time.Until(at), time.Second))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// NeedLeaderElection is false: every agent keeps its own certificate.
func (*Requester) NeedLeaderElection() bool { return false }

// Step reads the CA and, when the certificate is missing or due, asks for a new one.
func (r *Requester) Step(ctx context.Context) error {
	var cm corev1.ConfigMap
	if err := r.Reader.Get(ctx, r.CA, &cm); err != nil {
		return fmt.Errorf("reading the peer CA %s: %w", r.CA, err)
	}
	if err := r.Trust.Set([]byte(cm.Data[CAKey])); err != nil {
		return fmt.Errorf("the peer CA %s: %w", r.CA, err)
	}
	if at := r.Cert.RenewAt(); !at.IsZero() && time.Now().Before(at) {
		return nil
	}
	return r.Request(ctx)
}

// Request asks for a certificate and waits until it is issued, denied, or the wait times out.
func (r *Requester) Request(ctx context.Context) error {
	key, csrPEM, err := NewRequest(r.Node, r.IPs, r.ServiceNames...)
	if err != nil {
		return err
	}
	life := r.Lifetime
	if life == 0 {
		life = DefaultLifetime
	}
	csr := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: csrPrefix(r.Node)},
		Spec: certv1.CertificateSigningRequestSpec{Request: csrPEM, SignerName: SignerName,
			ExpirationSeconds: ptr.To(int32(life / time.Second)),
			Usages:            []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}},
	}
	if err := r.Client.Create(ctx, csr); err != nil {
		return fmt.Errorf("creating a certificate signing request: %w", err)
	}
	certPEM, err := r.await(ctx, csr.Name)
	if err != nil {
		return err
	}
	if err := r.Cert.Set(certPEM, key); err != nil {
		return err
	}
	r.Log.Info("Got a peer certificate", "csr", csr.Name, "renewAt", r.Cert.RenewAt())
	return nil
}

// await polls the request until it holds a certificate or is denied or failed.
func (r *Requester) await(ctx context.Context, name string) ([]byte, error) {
	poll, timeout := r.Poll, r.Timeout
	if poll <= 0 {
		poll = time.Second
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var csr certv1.CertificateSigningRequest
		if err := r.Reader.Get(ctx, client.ObjectKey{Name: name}, &csr); err != nil {
			return nil, fmt.Errorf("reading certificate signing request %s: %w", name, err)
		}
		for _, c := range csr.Status.Conditions {
			if (c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
				return nil, fmt.Errorf("certificate signing request %s: %s: %s", name, c.Reason, c.Message)
			}
		}
		if len(csr.Status.Certificate) > 0 {
			return csr.Status.Certificate, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("certificate signing request %s was not signed in %s: is the manager running?", name, timeout)
		case <-time.After(poll):
		}
	}
}

// csrPrefix is the generated name's prefix of r's requests: the node's name, cut to what a name
// admits.
func csrPrefix(node string) string {
	if len(node) > 200 {
		node = node[:200]
	}
	return "pqcache-peer-" + node + "-"
}
