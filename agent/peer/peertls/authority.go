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
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The keys of the CA Secret.
const (
	caSecretCert = "tls.crt"
	caSecretKey  = "tls.key"
)

// authority returns the CA, reading it from its Secret or making it there the first time, and
// makes sure the ConfigMap publishes its certificate. Two managers that race to make it both read
// back the one that was created first.
func (s *Signer) authority(ctx context.Context) (*CA, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ca == nil {
		ca, err := s.loadOrCreate(ctx)
		if err != nil {
			return nil, err
		}
		s.ca = ca
	}
	return s.ca, s.publish(ctx, s.ca.CertPEM)
}

func (s *Signer) loadOrCreate(ctx context.Context) (*CA, error) {
	var sec corev1.Secret
	err := s.Reader.Get(ctx, s.CA, &sec)
	if apierrors.IsNotFound(err) {
		ca, created, cerr := s.create(ctx)
		if cerr != nil || created {
			return ca, cerr
		}
		err = s.Reader.Get(ctx, s.CA, &sec) // another manager made it first
	}
	if err != nil {
		return nil, fmt.Errorf("reading the peer CA Secret %s: %w", s.CA, err)
	}
	return ParseCA(sec.Data[caSecretCert], sec.Data[caSecretKey])
}

// create makes a CA and stores it in its Secret; created is false when the Secret exists already.
func (s *Signer) create(ctx context.Context) (ca *CA, created bool, err error) {
	certPEM, keyPEM, err := NewCA(s.now())
	if err != nil {
		return nil, false, err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.CA.Namespace, Name: s.CA.Name,
		Labels: map[string]string{"app.kubernetes.io/component": "peer-ca"}},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{caSecretCert: certPEM, caSecretKey: keyPEM}}
	if err := s.Client.Create(ctx, sec); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("creating the peer CA Secret %s: %w", s.CA, err)
	}
	s.Log.Info("Made the peer CA", "secret", s.CA.String())
	ca, err = ParseCA(certPEM, keyPEM)
	return ca, true, err
}

// publish writes certPEM into the CA ConfigMap, unless it holds it already.
func (s *Signer) publish(ctx context.Context, certPEM []byte) error {
	var cm corev1.ConfigMap
	err := s.Reader.Get(ctx, s.CA, &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.CA.Namespace, Name: s.CA.Name,
			Labels: map[string]string{"app.kubernetes.io/component": "peer-ca"}}, Data: map[string]string{CAKey: string(certPEM)}}
		if err := s.Client.Create(ctx, &cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("publishing the peer CA in ConfigMap %s: %w", s.CA, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the peer CA ConfigMap %s: %w", s.CA, err)
	}
	if bytes.Equal([]byte(cm.Data[CAKey]), certPEM) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[CAKey] = string(certPEM)
	if err := s.Client.Update(ctx, &cm); err != nil {
		return fmt.Errorf("publishing the peer CA in ConfigMap %s: %w", s.CA, err)
	}
	return nil
}
