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

package webhookcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultCheckEvery is how often a Rotator reads the Secret again: how soon a replica serves what
// another replica renewed, and how soon a deleted Secret or an overwritten caBundle is mended.
const DefaultCheckEvery = time.Minute

// Rotator keeps the webhook's serving certificate: it reads it from Secret, makes or renews it there
// when it is missing, broken or due, and keeps the CA in the caBundle of every webhook of the
// MutatingWebhookConfiguration WebhookConfig. Every replica runs one (a webhook is served by all of
// them); they agree through the Secret, whose writes carry the resourceVersion read, so that two that
// renew at once keep one result. It needs get and update on the Secret and the webhook configuration
// by name, and create on Secrets.
type Rotator struct {
	// Client writes; Reader reads past the cache (the manager does not cache Secrets or webhook
	// configurations, and an informer on either would cost memory for the whole cluster's).
	Client client.Client
	Reader client.Reader
	// Secret holds the CA and the serving pair; Service is the webhook's Service, in Secret's namespace.
	Secret  types.NamespacedName
	Service string
	// WebhookConfig is the MutatingWebhookConfiguration whose caBundle is kept.
	WebhookConfig string
	Log           *slog.Logger
	// Now and CheckEvery are the clock and the period (defaults: time.Now, DefaultCheckEvery).
	Now        func() time.Time
	CheckEvery time.Duration

	serving atomic.Pointer[tls.Certificate]
}

// GetCertificate is tls.Config's: the current serving certificate, or an error until there is one.
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.serving.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the webhook has no serving certificate yet")
}

// Ready is a readiness check: a replica without a certificate must not be sent the API server's calls.
func (r *Rotator) Ready(*http.Request) error {
	_, err := r.GetCertificate(nil)
	return err
}

// NeedLeaderElection is false: every replica serves the webhook, so every replica needs the certificate.
func (*Rotator) NeedLeaderElection() bool { return false }

// Start keeps the certificate until ctx ends. A failed step is logged and tried again at the next tick.
func (r *Rotator) Start(ctx context.Context) error {
	every := r.CheckEvery
	if every <= 0 {
		every = DefaultCheckEvery
	}
	for {
		if err := r.Step(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error("Keeping the webhook certificate", "secret", r.Secret.String(), "err", err)
			every = min(every, 5*time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// Step reads the Secret, renews what must be, serves the result and writes its CA into the webhook
// configuration. A write that loses a race with another replica is read back once.
func (r *Rotator) Step(ctx context.Context) error {
	b, err := r.ensureBundle(ctx)
	if errors.Is(err, errLostRace) {
		b, err = r.ensureBundle(ctx)
	}
	if err != nil {
		return err
	}
	r.serving.Store(&b.serving)
	return r.publishCA(ctx, b.caPEM)
}

var errLostRace = errors.New("another replica wrote the webhook certificate Secret first")

// ensureBundle returns the Secret's bundle, made or renewed first when it must be.
func (r *Rotator) ensureBundle(ctx context.Context) (*bundle, error) {
	now := r.now()
	names := DNSNames(r.Service, r.Secret.Namespace)
	var sec corev1.Secret
	err := r.Reader.Get(ctx, r.Secret, &sec)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the webhook certificate Secret %s: %w", r.Secret, err)
	}
	found := err == nil
	old, perr := parseBundle(sec.Data)
	why := ""
	switch {
	case !found:
		why = "no Secret yet"
	case perr != nil:
		why = perr.Error()
		old = nil
	default:
		why = old.due(now, names)
	}
	if why == "" {
		return old, nil
	}
	b, err := issue(old, now, names)
	if err != nil {
		return nil, err
	}
	if err := r.write(ctx, &sec, found, b); err != nil {
		return nil, err
	}
	r.Log.Info("Issued the webhook serving certificate", "secret", r.Secret.String(), "why", why,
		"notAfter", b.serving.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return b, nil
}

// write stores b in the Secret: created when not found, else updated from the version read.
func (r *Rotator) write(ctx context.Context, sec *corev1.Secret, found bool, b *bundle) error {
	var err error
	if !found {
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Secret.Namespace, Name: r.Secret.Name,
			Labels: map[string]string{"app.kubernetes.io/component": "webhook-cert", "app.kubernetes.io/managed-by": "pqcache"}},
			Type: corev1.SecretTypeTLS, Data: b.data()}
		err = r.Client.Create(ctx, sec)
	} else {
		sec.Type, sec.Data = corev1.SecretTypeTLS, b.data()
		err = r.Client.Update(ctx, sec)
	}
	switch {
	case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
		return errLostRace
	case err != nil:
		return fmt.Errorf("writing the webhook certificate Secret %s: %w", r.Secret, err)
	}
	return nil
}

// publishCA writes caPEM into the caBundle of each of the configuration's webhooks that lacks it. A
// conflict (another replica wrote it at the same moment) is read again.
func (r *Rotator) publishCA(ctx context.Context, caPEM []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.publishCAOnce(ctx, caPEM) })
}

func (r *Rotator) publishCAOnce(ctx context.Context, caPEM []byte) error {
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: r.WebhookConfig}, &cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // not installed (yet); the next tick looks again
		}
		return fmt.Errorf("reading the webhook configuration %s: %w", r.WebhookConfig, err)
	}
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, caPEM) {
			cfg.Webhooks[i].ClientConfig.CABundle = caPEM
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := r.Client.Update(ctx, &cfg); err != nil {
		if apierrors.IsConflict(err) {
			return err // RetryOnConflict must see it unwrapped
		}
		return fmt.Errorf("writing the CA into the webhook configuration %s: %w", r.WebhookConfig, err)
	}
	r.Log.Info("Wrote the webhook CA into the webhook configuration", "configuration", r.WebhookConfig)
	return nil
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
