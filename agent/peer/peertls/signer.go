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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Extra keys of a bound ServiceAccount token's user, which the API server copies into a CSR.
const (
	extraNode   = "authentication.kubernetes.io/node-name"
	extraPod    = "authentication.kubernetes.io/pod-name"
	extraPodUID = "authentication.kubernetes.io/pod-uid"
)

// The reasons the signer writes on the CSRs it decides.
const (
	ReasonApproved = "PqcachePeerApproved"
	ReasonDenied   = "PqcachePeerDenied"
)

// Signer is the manager's approver and signer for SignerName. It approves a request only from the
// agents' ServiceAccount, through a token bound to an agent pod, for that pod's node and IPs, and
// signs approved ones with the CA it keeps in the Secret CA (making it on first use) and publishes
// in the ConfigMap of the same name.
type Signer struct {
	Client client.Client
	// Reader reads the CA Secret and the agents' pods uncached: the manager caches no Secret.
	Reader client.Reader
	// CA names the Secret and the ConfigMap, in the manager's namespace.
	CA types.NamespacedName
	// Agent is the agents' ServiceAccount.
	Agent types.NamespacedName
	// ServiceNames are the DNS names of the readers' Service that an agent's certificate may also
	// name (ServiceDNSNames); none when the agents serve no readers.
	ServiceNames []string
	Log          *slog.Logger
	Now          func() time.Time

	mu sync.Mutex
	ca *CA
}

// SetupWithManager watches the CSRs for SignerName only, and publishes the CA once the manager
// leads (agents wait for the ConfigMap before they ask).
func (s *Signer) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(caPublisher{s}); err != nil {
		return err
	}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == SignerName
	})
	return ctrl.NewControllerManagedBy(mgr).Named("peer-signer").
		For(&certv1.CertificateSigningRequest{}, builder.WithPredicates(ours)).Complete(s)
}

// caPublisher makes and publishes the CA when the manager starts leading, and keeps it published.
type caPublisher struct{ s *Signer }

func (p caPublisher) Start(ctx context.Context) error {
	for {
		wait := checkEvery // a ConfigMap deleted by hand is published again
		if _, err := p.s.authority(ctx); err != nil {
			p.s.Log.Warn("Publishing the peer CA", "error", err)
			wait = retryEvery
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// NeedLeaderElection is true: only the leader makes the CA.
func (caPublisher) NeedLeaderElection() bool { return true }

func (s *Signer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Reconcile approves or denies one request, then signs it once approved.
func (s *Signer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var csr certv1.CertificateSigningRequest
	if err := s.Client.Get(ctx, req.NamespacedName, &csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != SignerName || len(csr.Status.Certificate) > 0 || decided(&csr, certv1.CertificateDenied) ||
		decided(&csr, certv1.CertificateFailed) {
		return ctrl.Result{}, nil
	}
	if !decided(&csr, certv1.CertificateApproved) {
		return ctrl.Result{}, s.decide(ctx, &csr)
	}
	return ctrl.Result{}, s.sign(ctx, &csr)
}

func decided(csr *certv1.CertificateSigningRequest, t certv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// decide approves csr or denies it with the reason (the update of the approval comes back as an
// event, and signs).
func (s *Signer) decide(ctx context.Context, csr *certv1.CertificateSigningRequest) error {
	cond := certv1.CertificateSigningRequestCondition{Type: certv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ReasonApproved, Message: "a pqcache node agent asked for its own node's peer certificate"}
	if err := s.check(ctx, csr); err != nil {
		cond = certv1.CertificateSigningRequestCondition{Type: certv1.CertificateDenied, Status: corev1.ConditionTrue,
			Reason: ReasonDenied, Message: err.Error()}
		s.Log.Warn("Denied a peer certificate request", "csr", csr.Name, "user", csr.Spec.Username, "reason", err)
	}
	cond.LastUpdateTime = metav1.NewTime(s.now())
	csr.Status.Conditions = append(csr.Status.Conditions, cond)
	if err := s.Client.SubResource("approval").Update(ctx, csr); err != nil {
		return fmt.Errorf("recording the decision on %s: %w", csr.Name, err)
	}
	return nil
}

// check says why csr may not be approved.
func (s *Signer) check(ctx context.Context, csr *certv1.CertificateSigningRequest) error {
	if want := "system:serviceaccount:" + s.Agent.Namespace + ":" + s.Agent.Name; csr.Spec.Username != want {
		return fmt.Errorf("requested by %s, not by the node agents' ServiceAccount %s", csr.Spec.Username, want)
	}
	nodes, pods := csr.Spec.Extra[extraNode], csr.Spec.Extra[extraPod]
	if len(nodes) != 1 || len(pods) != 1 {
		return errors.New("requested with a token that is not bound to a pod on a node")
	}
	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return err
	}
	var pod corev1.Pod
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Agent.Namespace, Name: pods[0]}, &pod); err != nil {
		return fmt.Errorf("reading the requester's pod: %w", err)
	}
	if uids := csr.Spec.Extra[extraPodUID]; len(uids) != 1 || string(pod.UID) != uids[0] {
		return fmt.Errorf("pod %s is not the pod the requester's token is bound to", pod.Name)
	}
	if pod.Spec.NodeName != nodes[0] || pod.Spec.ServiceAccountName != s.Agent.Name {
		return fmt.Errorf("pod %s is not an agent pod on node %s", pod.Name, nodes[0])
	}
	var ips []net.IP
	for _, p := range pod.Status.PodIPs {
		if ip := net.ParseIP(p.IP); ip != nil {
			ips = append(ips, ip)
		}
	}
	return CheckRequest(req, nodes[0], ips, s.ServiceNames...)
}

// sign issues the certificate of an approved request.
func (s *Signer) sign(ctx context.Context, csr *certv1.CertificateSigningRequest) error {
	ca, err := s.authority(ctx)
	if err != nil {
		return err
	}
	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return s.fail(ctx, csr, err)
	}
	var life time.Duration
	if e := csr.Spec.ExpirationSeconds; e != nil {
		life = time.Duration(*e) * time.Second
	}
	cert, err := ca.Sign(req, s.now(), life)
	if err != nil {
		return s.fail(ctx, csr, err)
	}
	csr.Status.Certificate = cert
	if err := s.Client.Status().Update(ctx, csr); err != nil {
		return fmt.Errorf("writing the certificate of %s: %w", csr.Name, err)
	}
	s.Log.Info("Signed a peer certificate", "csr", csr.Name, "node", csr.Spec.Extra[extraNode])
	return nil
}

// fail marks a request that cannot be signed as Failed.
func (s *Signer) fail(ctx context.Context, csr *certv1.CertificateSigningRequest, cause error) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{Type: certv1.CertificateFailed,
		Status: corev1.ConditionTrue, Reason: "PqcachePeerSignFailed", Message: cause.Error(), LastUpdateTime: metav1.NewTime(s.now())})
	if err := s.Client.Status().Update(ctx, csr); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking %s failed: %w", csr.Name, err)
	}
	return nil
}
